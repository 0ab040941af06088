// Conv (ONNX opsets 1, 11, 22): 1-D/2-D/3-D, groups (incl. depthwise), strides, dilations,
// explicit pads or auto_pad SAME_UPPER/SAME_LOWER/VALID, optional bias.
// dtypes: f32, f64 (computed natively), f16, bf16 (converted to f32, computed and accumulated
// in f32, stored back). Algorithms: 1x1/stride-1/unpadded convs are one GEMM per image and group;
// depthwise convs (C/group == 1) run conv_depthwise.cpp (3x3/5x5, stride 1/2) or a direct
// per-channel loop; f32 convs with horizontal stride 1 and output rows of 16 or more run the
// direct kernel (conv_direct.cpp, no im2col); everything else is im2col on column blocks + the
// AVX-512 conv GEMM (Eigen without AVX-512), blocks spread over the thread pool.
// CausalConvWithState (opset 27): depthwise causal 1-D conv with carried state and optional SiLU,
// through the same depthwise path; same dtypes (f64 in f64).
// Not supported: more than 3 spatial dims.
#include <Eigen/Core>
#include <algorithm>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/nn_register.h"
#include "backends/fusion_match.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cpu {

namespace {

// Output positions [lo, hi) of one output row whose input column ow*s + off lies in [0, W).
inline void valid_range(int64_t OW, int64_t W, int64_t s, int64_t off, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / s + 1;
  lo = std::min(lo, OW);
  hi = std::min(hi, OW);
}

#if MCC_X86
MCC_AVX512_BEGIN
// d[ow] = xr[2*ow + off] for ow in [lo, hi), 16 at a time (even lanes of 32 loaded values).
void gather_stride2_avx512(const float* xr, int64_t off, int64_t lo, int64_t hi, float* d) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  for (int64_t ow = lo; ow < hi; ow += 16) {
    const int64_t n = std::min<int64_t>(16, hi - ow), need = 2 * n - 1;
    const __mmask16 l0 = need >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << need) - 1);
    const __mmask16 l1 = need <= 16 ? __mmask16(0) : __mmask16((1u << (need - 16)) - 1);
    const float* sp = xr + ow * 2 + off;
    const __m512 a = _mm512_maskz_loadu_ps(l0, sp), b = _mm512_maskz_loadu_ps(l1, sp + 16);
    _mm512_mask_storeu_ps(d + ow, n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1),
                          _mm512_permutex2var_ps(a, even, b));
  }
}
MCC_AVX512_END
#endif

// d[ow] = xr[2*ow + off] for ow in [lo, hi); false (nothing written) unless T is float and the
// CPU has AVX-512.
template <class T>
inline bool gather_stride2(const T* xr, int64_t off, int64_t lo, int64_t hi, T* d) {
#if MCC_X86
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_avx512()) {
      gather_stride2_avx512(xr, off, lo, hi, d);
      return true;
    }
  }
#endif
  (void)xr, (void)off, (void)lo, (void)hi, (void)d;
  return false;
}

// Fills col[(ci, kd, kh, kw), j] for output positions [p0, p0 + nb) of one image and group.
template <class T>
void im2col_block(const WindowGeom& g, int64_t cg, const T* x, int64_t p0, int64_t nb, T* col) {
  const int64_t OH = g.out[1], OW = g.out[2], H = g.in[1], W = g.in[2], D = g.in[0];
  const int64_t plane = g.in_size();
  int64_t row = 0;
  // Narrow 1-D blocks (an STFT's few frames, a VAD encoder's): element by element, without the
  // general loop's calls to copy a handful of values.
  if (nb < 16 && D == 1 && H == 1 && g.k[0] == 1 && g.k[1] == 1) {
    const int64_t s = g.stride[2];
    for (int64_t ci = 0; ci < cg; ++ci) {
      const T* xc = x + ci * plane;
      for (int64_t kw = 0; kw < g.k[2]; ++kw, ++row) {
        T* d = col + row * nb - p0;  // indexed by output position
        const int64_t off = kw * g.dil[2] - g.pad_b[2];
        int64_t lo, hi;
        valid_range(OW, W, s, off, lo, hi);
        lo = std::clamp(lo, p0, p0 + nb);
        hi = std::clamp(hi, lo, p0 + nb);
        for (int64_t ow = p0; ow < lo; ++ow) d[ow] = T(0);
        for (int64_t ow = lo; ow < hi; ++ow) d[ow] = xc[ow * s + off];
        for (int64_t ow = hi; ow < p0 + nb; ++ow) d[ow] = T(0);
      }
    }
    return;
  }
  // Unit strides, one depth slice and output rows as wide as input rows ("same" width): every
  // (ci, kh, kw) row of the block is the input plane shifted by a constant, so it is copied in
  // one run; positions whose input row or column falls outside the plane are then zeroed. Same
  // values as the general loop below, without its per-output-row bookkeeping on narrow maps.
  if (D == 1 && g.k[0] == 1 && g.out[0] == 1 && g.stride[1] == 1 && g.stride[2] == 1 && OW == W) {
    const int64_t HW = H * W;
    for (int64_t ci = 0; ci < cg; ++ci) {
      const T* xc = x + ci * plane;
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw, ++row) {
          T* dst = col + row * nb;
          const int64_t off = kw * g.dil[2] - g.pad_b[2];
          const int64_t shift = (kh * g.dil[1] - g.pad_b[1]) * W + off;
          // idx = p0 + j + shift must lie in [0, HW).
          const int64_t jlo = std::clamp<int64_t>(-shift - p0, 0, nb);
          const int64_t jhi = std::clamp<int64_t>(HW - shift - p0, jlo, nb);
          std::fill(dst, dst + jlo, T(0));
          std::copy(xc + p0 + jlo + shift, xc + p0 + jhi + shift, dst + jlo);
          std::fill(dst + jhi, dst + nb, T(0));
          if (off != 0) {
            // Columns ow with ow + off outside [0, W) read padding.
            const int64_t bad_lo = off < 0 ? 0 : std::max<int64_t>(0, W - off);
            const int64_t bad_hi = off < 0 ? std::min<int64_t>(W, -off) : W;
            for (int64_t rs = p0 - p0 % OW; rs < p0 + nb; rs += OW)
              for (int64_t ow = bad_lo; ow < bad_hi; ++ow)
                if (rs + ow >= p0 && rs + ow < p0 + nb) dst[rs + ow - p0] = T(0);
          }
        }
    }
    return;
  }
  for (int64_t ci = 0; ci < cg; ++ci) {
    const T* xc = x + ci * plane;
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw, ++row) {
          T* dst = col + row * nb;
          int64_t p = p0;
          int64_t j = 0;
          while (j < nb) {
            const int64_t ow0 = p % OW, oh = (p / OW) % OH, od = p / (OW * OH);
            const int64_t run = std::min(nb - j, OW - ow0);  // positions left on this output row
            const int64_t id = od * g.stride[0] - g.pad_b[0] + kd * g.dil[0];
            const int64_t ih = oh * g.stride[1] - g.pad_b[1] + kh * g.dil[1];
            if (id < 0 || id >= D || ih < 0 || ih >= H) {
              std::fill(dst + j, dst + j + run, T(0));
            } else {
              const T* xr = xc + (id * H + ih) * W;
              const int64_t sw = g.stride[2], off = kw * g.dil[2] - g.pad_b[2];
              // Output columns [lo, hi) of this row read inside the input; the rest is padding.
              int64_t lo, hi;
              valid_range(OW, W, sw, off, lo, hi);
              lo = std::clamp(lo, ow0, ow0 + run);
              hi = std::clamp(hi, lo, ow0 + run);
              T* d = dst + j - ow0;  // indexed by output column
              std::fill(d + ow0, d + lo, T(0));
              if (sw == 1)
                std::copy(xr + lo + off, xr + hi + off, d + lo);
              else if (sw != 2 || !gather_stride2(xr, off, lo, hi, d))
                for (int64_t ow = lo; ow < hi; ++ow) d[ow] = xr[ow * sw + off];
              std::fill(d + hi, d + ow0 + run, T(0));
            }
            j += run;
            p += run;
          }
        }
  }
}

// Depthwise 1-D/2-D conv on a zero-padded copy of each plane (no bounds checks). The padded
// plane is split by column phase (column j*sw + q goes to phase q, column j), so every tap of
// every stride reads a contiguous run. With unit strides each tap is one multiply-add over the
// output rows laid out with the padded width (the extra columns are computed and dropped): long
// vectorisable loops even on 7x7 maps. Three horizontal taps are summed per pass.
template <class T>
void depthwise_padded(const KernelContext& ctx, const ConvProblem& p, const T* x, const T* w,
                      const T* bias, T* y, const Epilogue* ep) {
  const WindowGeom& g = p.g;
  const int64_t mult = p.m / p.group, KH = g.k[1], KW = g.k[2], ks = KH * KW;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t PH = H + g.pad_b[1] + g.pad_e[1], PW = W + g.pad_b[2] + g.pad_e[2];
  const int64_t sh = g.stride[1], sw = g.stride[2], dh = g.dil[1], dw = g.dil[2];
  const bool unit = sh == 1 && sw == 1;
  const int64_t PWs = (PW + sw - 1) / sw;                 // columns of one phase
  const int64_t phase_len = PH * PWs + (KW - 1) * dw + 1;  // slack for the flattened unit loop
  const int64_t AW = unit ? PW : OW;                      // row stride of the accumulator
  ctx.parallel_for(p.n * p.m, OH * OW * ks, [&](int64_t b, int64_t e) {
    std::vector<T> phases(static_cast<size_t>(sw * phase_len), T(0));
    std::vector<T> acc(static_cast<size_t>(OH * AW));
    std::vector<T> rowbuf(static_cast<size_t>(PW));
    for (int64_t item = b; item < e; ++item) {
      const int64_t oc = item % p.m, ni = item / p.m, ic = oc / mult;
      const T* xc = x + (ni * p.c + ic) * H * W;
      for (int64_t h = 0; h < H; ++h) {
        const int64_t ph = h + g.pad_b[1];
        if (sw == 1) {
          std::copy(xc + h * W, xc + (h + 1) * W, phases.data() + ph * PWs + g.pad_b[2]);
        } else {
          std::copy(xc + h * W, xc + (h + 1) * W, rowbuf.data() + g.pad_b[2]);
          for (int64_t q = 0; q < sw; ++q) {
            T* dst = phases.data() + q * phase_len + ph * PWs;
            for (int64_t j = 0, c = q; c < PW; ++j, c += sw) dst[j] = rowbuf[c];
          }
        }
      }
      const T bv = bias ? bias[oc] : T(0);
      std::fill(acc.begin(), acc.end(), bv);
      const T* wc = w + oc * ks;
      T* yc = y + item * OH * OW;
      // One output row range: acc rows [0, rows) of length len, tap rows starting at src rows
      // (oh*sh + kh*dh); `flat` = rows are contiguous in both acc and source (unit strides).
      auto taps = [&](T* a, int64_t len, int64_t src_row, int64_t kh) {
        int64_t kw = 0;
        for (; kw + 3 <= KW; kw += 3) {
          const T w0 = wc[kh * KW + kw], w1 = wc[kh * KW + kw + 1], w2 = wc[kh * KW + kw + 2];
          const int64_t c0 = kw * dw, c1 = c0 + dw, c2 = c1 + dw;
          const T* s0 = phases.data() + (c0 % sw) * phase_len + src_row * PWs + c0 / sw;
          const T* s1 = phases.data() + (c1 % sw) * phase_len + src_row * PWs + c1 / sw;
          const T* s2 = phases.data() + (c2 % sw) * phase_len + src_row * PWs + c2 / sw;
          for (int64_t q = 0; q < len; ++q) {  // the same order as one tap at a time
            T v = a[q];
            v += w0 * s0[q];
            v += w1 * s1[q];
            v += w2 * s2[q];
            a[q] = v;
          }
        }
        for (; kw < KW; ++kw) {
          const T wv = wc[kh * KW + kw];
          const int64_t c0 = kw * dw;
          const T* s0 = phases.data() + (c0 % sw) * phase_len + src_row * PWs + c0 / sw;
          for (int64_t q = 0; q < len; ++q) a[q] += wv * s0[q];
        }
      };
      if (unit) {
        for (int64_t kh = 0; kh < KH; ++kh) taps(acc.data(), OH * PW, kh * dh, kh);
        for (int64_t oh = 0; oh < OH; ++oh)
          std::copy(acc.data() + oh * PW, acc.data() + oh * PW + OW, yc + oh * OW);
      } else {
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t kh = 0; kh < KH; ++kh) taps(acc.data() + oh * OW, OW, oh * sh + kh * dh, kh);
        std::copy(acc.data(), acc.data() + OH * OW, yc);
      }
      if (ep && !ep->trivial()) apply_epilogue<T>(yc, 1, OH * OW, OH * OW, nullptr, *ep);
    }
  });
}

template <class T>
void depthwise(const KernelContext& ctx, const ConvProblem& p, const T* x, const T* w,
               const T* bias, T* y, const Epilogue* ep) {
  const WindowGeom& g = p.g;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    if (depthwise_fast<T>(ctx, p, x, w, bias, y, ep)) return;
  if (g.in[0] == 1 && g.k[0] == 1) {
    depthwise_padded(ctx, p, x, w, bias, y, ep);
    return;
  }
  const int64_t mult = p.m / p.group, ks = g.k_size(), P = g.out_size();
  ctx.parallel_for(p.n * p.m, P * ks, [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t oc = item % p.m, ni = item / p.m, ic = oc / mult;
      const T* xc = x + (ni * p.c + ic) * g.in_size();
      const T* wc = w + oc * ks;
      T* yc = y + item * P;
      std::fill(yc, yc + P, bias ? bias[oc] : T(0));
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          T* yr = yc + (od * g.out[1] + oh) * g.out[2];
          for (int64_t kd = 0; kd < g.k[0]; ++kd) {
            const int64_t id = od * g.stride[0] - g.pad_b[0] + kd * g.dil[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t kh = 0; kh < g.k[1]; ++kh) {
              const int64_t ih = oh * g.stride[1] - g.pad_b[1] + kh * g.dil[1];
              if (ih < 0 || ih >= g.in[1]) continue;
              const T* xr = xc + (id * g.in[1] + ih) * g.in[2];
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const T wv = wc[(kd * g.k[1] + kh) * g.k[2] + kw];
                const int64_t off = kw * g.dil[2] - g.pad_b[2], s = g.stride[2];
                int64_t lo, hi;
                valid_range(g.out[2], g.in[2], s, off, lo, hi);
                if (s == 1) {
                  const T* xs = xr + off;
                  for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xs[ow];
                } else {
                  for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * s + off];
                }
              }
            }
          }
        }
      if (ep && !ep->trivial()) apply_epilogue<T>(yc, 1, P, P, nullptr, *ep);
    }
  });
}

}  // namespace

template <class T>
void conv_run(const KernelContext& ctx, const ConvProblem& p, const T* x, const T* w, const T* bias,
              T* y, const Epilogue* ep, const float* w_t) {
  using RM = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const WindowGeom& g = p.g;
  const int64_t cg = p.c / p.group, mg = p.m / p.group, ks = g.k_size();
  const int64_t K = cg * ks, P = g.out_size(), IP = g.in_size();
  if (p.n == 0 || P == 0 || p.m == 0) return;
  if (cg == 1 && p.group == p.c && p.group > 1) {
    depthwise(ctx, p, x, w, bias, y, ep);
    return;
  }
  const Epilogue none;
  const Epilogue& epi = ep ? *ep : none;
  bool pointwise = ks == 1;
  for (int i = 0; i < 3; ++i)
    pointwise = pointwise && g.stride[i] == 1 && g.pad_b[i] == 0 && g.pad_e[i] == 0;
  if constexpr (std::is_same_v<T, float>) {
    // Convs wider than 1x1 take it only with many output channels (M >= 128) or under 16
    // positions: the im2col of the whole map is shared by every channel chunk, but its columns
    // are written across threads and read across threads, which cost more than it saved on 16-
    // and 64-channel convs at 2 threads (an STFT's 257 channels gain 45 %). Under 16 positions
    // both stay on one thread, and conv_gemm_f32's 16-position tiles would be mostly empty (a
    // VAD encoder's 64-channel conv over 2 frames: 32 -> 6 us a run).
    if (w_t && p.group == 1 && channel_lanes_pay(P, K) && (pointwise || p.m >= 128 || P < 16)) {
      // Small maps (channel_lanes_pay bounds P, so an im2col is at most K x 288 values), in a
      // buffer kept per thread (a fresh one per run costs page faults).
      thread_local std::vector<float> col;
      if (!pointwise && col.size() < static_cast<size_t>(K * P)) col.resize(static_cast<size_t>(K * P));
      float* cols = col.data();  // inside the lambda `col` would name the worker's own
      bool done = true;
      for (int64_t ni = 0; ni < p.n && done; ++ni) {
        const float* src = x + ni * p.c * IP;
        if (!pointwise) {
          // Split by input channels (each fills its own ks rows), across threads.
          ctx.parallel_for(p.c, ks * P, [&](int64_t b, int64_t e) {
            im2col_block(g, e - b, src + b * IP, 0, P, cols + b * ks * P);
          });
          src = cols;
        }
        done = conv_gemm_f32_cl(ctx, p.m, P, K, w_t, src, y + ni * p.m * P, bias, &epi);
      }
      if (done) return;
    }
  }
  // Column blocks: enough blocks to feed every thread, each block's K x nb input columns small
  // enough to stay in cache while its output block is computed and finished (bias, activation).
  const int64_t threads = std::max(1, ctx.num_threads());
  int64_t nb = std::max<int64_t>(pointwise ? 128 : 32, (int64_t{1} << (pointwise ? 15 : 16)) /
                                                           std::max<int64_t>(K, 1));
  // Fewer images x groups than threads: split the positions when each thread still gets 64 or
  // more of them, else split the output channels (narrow maps keep their full-width tiles).
  const bool few = p.n * p.group < threads;
  if (few && P >= 64 * threads) {
    // One block per thread: rounding the width up to whole 16-column tiles keeps the count at
    // `threads` (rounding down made a third block and gave one thread two of three).
    nb = std::min(nb, (P + threads - 1) / threads);
    if (nb > 16) nb = (nb + 15) / 16 * 16;
  } else if (nb > 16) {
    nb = nb / 16 * 16;
  }
  // Balanced blocks (no short tail block), multiples of 16 positions where that is possible; with
  // fewer images x groups than threads, a multiple of the thread count (3 blocks on 2 threads
  // left one thread idle a third of the time).
  int64_t blocks = (P + nb - 1) / nb;
  if (few && blocks > 1) blocks = (blocks + threads - 1) / threads * threads;
  nb = (P + blocks - 1) / blocks;
  if (nb > 16) nb = (nb + 15) / 16 * 16;
  nb = std::min(nb, P);
  blocks = (P + nb - 1) / nb;
  int64_t mc = mg;  // output channels per item, a multiple of the 6-row register tile
  const int64_t col_items = p.n * p.group * blocks;
  if (col_items < threads && mg >= 12) {
    const int64_t parts = std::min<int64_t>((threads + col_items - 1) / col_items, mg / 6);
    mc = ((mg + parts - 1) / parts + 5) / 6 * 6;
  }
  const int64_t msplit = (mg + mc - 1) / mc;
  // Horizontal stride 1: the direct kernel reads the input in place, one output row at a time in
  // 32-lane tiles. Rows that fill less than 3/4 of their tiles' lanes (16 of 32, 40 of 64) go
  // through im2col and the GEMM's full tiles instead.
  const int64_t row_lanes = (g.out[2] + 31) / 32 * 32;
  const bool direct = std::is_same_v<T, float> && !pointwise && g.in[0] == 1 && g.k[0] == 1 &&
                      g.stride[2] == 1 && g.out[2] * 4 >= row_lanes * 3;
  ctx.parallel_for(p.n * p.group * blocks * msplit, mc * K * nb, [&](int64_t b, int64_t e) {
    std::vector<T> col;  // the im2col block, sized when a block needs one (not the direct kernel's)
    for (int64_t item = b; item < e; ++item) {
      const int64_t mi = item % msplit, rest = item / msplit;
      const int64_t blk = rest % blocks, ng = rest / blocks, gi = ng % p.group, ni = ng / p.group;
      const int64_t p0 = blk * nb, cnt = std::min(nb, P - p0);
      const int64_t m0 = mi * mc, mcnt = std::min(mc, mg - m0);
      const T* xg = x + (ni * p.c + gi * cg) * IP;
      Eigen::Map<const RM> wm(w + (gi * mg + m0) * K, mcnt, K);
      Eigen::Map<RM, 0, Eigen::OuterStride<>> ym(y + (ni * p.m + gi * mg + m0) * P + p0, mcnt, cnt,
                                                 Eigen::OuterStride<>(P));
      const T* bs = bias ? bias + gi * mg + m0 : nullptr;
      if constexpr (std::is_same_v<T, float>) {
        if (direct && conv_direct_f32(g, cg, xg, p0, cnt, mcnt, wm.data(), K, ym.data(), P, bs,
                                      &epi))
          continue;
      }
      const T* src = xg + p0;
      int64_t ld = IP;
      if (!pointwise) {
        // Also when the direct kernel declined the block (it is not built without AVX-512).
        if (col.empty()) col.resize(static_cast<size_t>(K * nb));
        im2col_block(g, cg, xg, p0, cnt, col.data());
        src = col.data();
        ld = cnt;
      }
      bool done = false, finished = false;
      if constexpr (std::is_same_v<T, float>) {
        // Bias and the activation are applied in the GEMM's registers.
        finished = true;
        done = conv_gemm_f32(mcnt, cnt, K, wm.data(), K, src, ld, ym.data(), P, bs, &epi);
      }
      if (!done) {
        finished = false;
        Eigen::Map<const RM, 0, Eigen::OuterStride<>> cm(src, K, cnt, Eigen::OuterStride<>(ld));
        ym.noalias() = wm * cm;
      }
      if (!finished && (bias || !epi.trivial())) apply_epilogue<T>(ym.data(), mcnt, cnt, P, bs, epi);
    }
  });
}

template void conv_run<float>(const KernelContext&, const ConvProblem&, const float*, const float*,
                              const float*, float*, const Epilogue*, const float*);
template void conv_run<double>(const KernelContext&, const ConvProblem&, const double*,
                               const double*, const double*, double*, const Epilogue*, const float*);
template void conv_run<int32_t>(const KernelContext&, const ConvProblem&, const int32_t*,
                                const int32_t*, const int32_t*, int32_t*, const Epilogue*, const float*);

ConvProblem conv_problem(const ir::Node& n, const WindowAttrs& a, int64_t group,
                         const std::vector<int64_t>& xd, const std::vector<int64_t>& wd) {
  if (xd.size() < 3)
    throw ModelError(n.describe() + ": X must have rank >= 3, got rank " +
                     std::to_string(xd.size()));
  if (wd.size() != xd.size())
    throw ModelError(n.describe() + ": W has rank " + std::to_string(wd.size()) + ", X has rank " +
                     std::to_string(xd.size()));
  std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
  if (!a.kernel_shape.empty() && a.kernel_shape != kernel)
    throw ModelError(n.describe() +
                     ": kernel_shape attribute does not match the weight's spatial dims");
  ConvProblem p;
  p.n = xd[0];
  p.c = xd[1];
  p.m = wd[0];
  p.group = group;
  if (group <= 0 || p.c % group != 0 || p.m % group != 0 || wd[1] * group != p.c)
    throw ModelError(n.describe() + ": channels do not match groups: X has " + std::to_string(p.c) +
                     " channels, W is [" + std::to_string(wd[0]) + "," + std::to_string(wd[1]) +
                     ",...], group=" + std::to_string(group));
  p.g = conv_geometry(n, a, xd, kernel, false);
  return p;
}

namespace {

Kernel make_conv(const ir::Node& node) {
  const WindowAttrs attrs = WindowAttrs::parse(node);
  const int64_t group = ir::ConvAttrs(node).group();
  // W^T of a constant f32 one-group weight, for small maps (conv_gemm_cl.cpp). Not for an
  // initializer that is also a graph input: a feed may replace it.
  std::shared_ptr<const std::vector<float>> wt;
  const ir::Value* wv = node.inputs.size() > 1 ? node.inputs[1] : nullptr;
  if (const ir::Tensor* w = wv && !wv->is_graph_input ? constant_of(wv, ir::DType::F32) : nullptr) {
    auto t = channel_lanes_weights(w->data<float>().data(), w->dims(), group,
                                 node.outputs.empty() ? std::vector<int64_t>{}
                                                      : node.outputs[0]->shape.static_dims().value_or(std::vector<int64_t>{}));
    if (!t.empty()) wt = std::make_shared<const std::vector<float>>(std::move(t));
  }
  // A constant f16 weight widened to f32 once, not on every run.
  std::shared_ptr<const std::vector<float>> w16;
  if (const ir::Tensor* w = wv && !wv->is_graph_input ? constant_of(wv, ir::DType::F16) : nullptr)
    w16 = std::make_shared<const std::vector<float>>(f16_values(*w));
  return [attrs, group, wt, w16](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const ir::Tensor& w = ctx.in(1);
    const bool has_b = ctx.has_input(2);
    if (w.dtype() != x.dtype() || (has_b && ctx.in(2).dtype() != x.dtype()))
      throw ModelError(n.describe() + ": X, W and B must have the same dtype");
    const ConvProblem p = conv_problem(n, attrs, group, x.dims(), w.dims());
    if (has_b && ctx.in(2).numel() != p.m)
      throw ModelError(n.describe() + ": B must have " + std::to_string(p.m) + " values, got " +
                       std::to_string(ctx.in(2).numel()));
    ir::Tensor& y = ctx.alloc_output_overwritten(0, x.dtype(), p.g.out_dims(p.n, p.m));
    ir::dispatch<ir::DType::F32, ir::DType::F64, ir::DType::F16, ir::DType::BF16>(
        x.dtype(), n.describe() + ": Conv", [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
            conv_run<T>(ctx, p, x.data<T>().data(), w.data<T>().data(),
                        has_b ? ctx.in(2).data<T>().data() : nullptr, y.mutable_data<T>().data(),
                        nullptr, std::is_same_v<T, float> && wt ? wt->data() : nullptr);
          } else {
            const auto xf = values_as<float, T>(x);
            std::vector<float> wconv;
            if (!(std::is_same_v<T, f16> && w16)) wconv = values_as<float, T>(w);
            const float* wp = wconv.empty() && w16 ? w16->data() : wconv.data();
            const std::vector<float> bf =
                has_b ? values_as<float, T>(ctx.in(2)) : std::vector<float>{};
            std::vector<float> yf(static_cast<size_t>(y.numel()));
            conv_run<float>(ctx, p, xf.data(), wp, has_b ? bf.data() : nullptr, yf.data());
            auto yo = y.mutable_data<T>();
            if constexpr (std::is_same_v<T, f16>) {
              f32_to_f16(yf.data(), yo.data(), static_cast<int64_t>(yf.size()));
            } else {
              for (size_t i = 0; i < yf.size(); ++i) yo[i] = T(yf[i]);
            }
          }
        });
  };
}

// CausalConvWithState: depthwise 1-D conv over [past_state | input] (zeros when no past), optional
// fused SiLU; present_state = the last k - 1 positions of that concatenation.
Kernel make_causal_conv(const ir::Node& node) {
  const std::string act = node.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    throw ModelError(node.describe() + ": activation must be none, silu or swish, got '" + act +
                     "'");
  const bool silu = act != "none";
  return [silu](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const ir::Tensor& w = ctx.in(1);
    if (x.rank() != 3 || w.rank() != 3 || w.dims()[0] != x.dims()[1] || w.dims()[1] != 1)
      throw ModelError(n.describe() + ": input must be [B, C, L] and weight [C, 1, k]");
    const int64_t B = x.dims()[0], C = x.dims()[1], L = x.dims()[2], k = w.dims()[2];
    if (k < 1) throw ModelError(n.describe() + ": kernel size must be positive");
    const bool has_b = ctx.has_input(2), has_past = ctx.has_input(3);
    if (has_b && ctx.in(2).numel() != C)
      throw ModelError(n.describe() + ": bias must have C values");
    if (has_past && ctx.in(3).dims() != std::vector<int64_t>{B, C, k - 1})
      throw ModelError(n.describe() + ": past_state must be [B, C, k - 1]");
    for (size_t i = 1; i < 4; ++i)
      if (ctx.has_input(i) && ctx.in(i).dtype() != x.dtype())
        throw ModelError(n.describe() + ": all inputs must have the input's dtype");
    const int64_t PL = L + k - 1;
    ConvProblem p;
    p.n = B;
    p.c = C;
    p.m = C;
    p.group = C;
    p.g.nd = 1;
    p.g.in[2] = PL;
    p.g.k[2] = k;
    p.g.out[2] = L;
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), {B, C, L});
    ir::dispatch<MCC_FLOAT_DTYPES>(
        x.dtype(), n.describe() + ": CausalConvWithState", [&](auto tag) {
          using T = typename decltype(tag)::type;
          using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
          const auto xv = values_as<A, T>(x), wv = values_as<A, T>(w);
          const auto bv = has_b ? values_as<A, T>(ctx.in(2)) : std::vector<A>{};
          const auto pv = has_past ? values_as<A, T>(ctx.in(3))
                                   : std::vector<A>(static_cast<size_t>(B * C * (k - 1)), A(0));
          std::vector<A> padded(static_cast<size_t>(B * C * PL)),
              out(static_cast<size_t>(B * C * L));
          for (int64_t bc = 0; bc < B * C; ++bc) {
            std::copy_n(pv.begin() + bc * (k - 1), k - 1, padded.begin() + bc * PL);
            std::copy_n(xv.begin() + bc * L, L, padded.begin() + bc * PL + k - 1);
          }
          conv_run<A>(ctx, p, padded.data(), wv.data(), has_b ? bv.data() : nullptr, out.data());
          auto yo = y.mutable_data<T>();
          for (size_t i = 0; i < out.size(); ++i) {
            // Rounded to the storage type first, as the reference applies SiLU to the stored conv
            // output.
            const A c = static_cast<A>(static_cast<float>(static_cast<T>(out[i])));
            yo[i] = static_cast<T>(silu ? c / (A(1) + std::exp(-c)) : c);
          }
          if (ctx.num_outputs() > 1 && ctx.wants_output(1)) {
            auto so = ctx.alloc_output(1, x.dtype(), {B, C, k - 1}).template mutable_data<T>();
            for (int64_t bc = 0; bc < B * C; ++bc)
              for (int64_t j = 0; j < k - 1; ++j)
                so[static_cast<size_t>(bc * (k - 1) + j)] =
                    static_cast<T>(padded[static_cast<size_t>(bc * PL + L + j)]);
          }
        });
  };
}

}  // namespace

void im2col_f32(const WindowGeom& g, int64_t cg, const float* x, int64_t p0, int64_t nb, float* col) {
  im2col_block(g, cg, x, p0, nb, col);
}

void register_conv(KernelRegistry& r) {
  r.add("Conv", 1, 0, make_conv);
  r.add("CausalConvWithState", 27, 0, make_causal_conv);
}

}  // namespace mcc::backends::cpu
