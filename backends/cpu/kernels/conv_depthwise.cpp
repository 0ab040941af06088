// Depthwise Conv fast path (part of Conv, ONNX opsets 1, 11, 22; see conv.cpp): 2-D, square
// 3x3 or 5x5 kernels, stride 1 or 2 in both dims, no dilation, any pads and channel multiplier.
// dtypes: f32 and f64, accumulated in the input type. Each channel's input rows are copied once
// into zero-padded column phases (column j*S + q of the padded row goes to phase q, column j), so
// every tap of every output row reads a contiguous run and the output row is computed in one
// vectorised pass with the K*K weights in registers; out-of-range rows read a zero row. Each
// output is bias + taps summed in (kh, kw) order, the same order for every thread count. On
// AVX-512 builds f32 outputs are computed 4 rows x 16 outputs at a time with fused multiply-adds:
// each input row of the block is loaded once as two aligned vectors and shifted in registers for
// the column taps (loads, not FMAs, limited the row-at-a-time form), and the epilogue
// activation is applied in registers.
// f32 with channel multiplier 1 on AVX-512 builds runs the channels-in-lanes kernel instead
// (conv_depthwise_c16.cpp: the same values, faster on every shape measured); this per-plane kernel
// serves f64, channel multipliers > 1 and builds without AVX-512.
// Everything else (dilations, other kernel sizes or strides, 1-D/3-D) returns false and takes the
// general depthwise loop in conv.cpp.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#if defined(__AVX512F__)
#include "backends/cpu/kernels/conv_act_avx512.h"
#endif

namespace mcc::backends::cpu {

namespace {

#if defined(__AVX512F__)
// Lanes [sh, sh + 16) of the 32-lane concatenation hi:lo (sh in 0..4; valignd needs an immediate).
inline __m512i shift_lanes(__m512i lo, __m512i hi, int sh) {
  switch (sh) {
    case 0: return lo;
    case 1: return _mm512_alignr_epi32(hi, lo, 1);
    case 2: return _mm512_alignr_epi32(hi, lo, 2);
    case 3: return _mm512_alignr_epi32(hi, lo, 3);
    default: return _mm512_alignr_epi32(hi, lo, 4);
  }
}
#endif

template <class T, int K, int S>
void run_dw(const KernelContext& ctx, const ConvProblem& p, const T* x, const T* w, const T* bias,
            T* y, const Epilogue* ep) {
  const WindowGeom& g = p.g;
  const int64_t mult = p.m / p.group;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t pt = g.pad_b[1], pl = g.pad_b[2];
  // Columns of one phase row: every output column plus slack, rounded to whole 16-float vectors
  // so the AVX-512 path reads two aligned vectors per row and step (zeros past the data).
  const int64_t L = ((OW + K + 15) / 16) * 16 + 16;
  const int64_t rows = std::max<int64_t>((OH - 1) * S + K, pt + H);  // padded rows addressed
  // Phase q of padded row r starts at buf[(r * S + q) * L]; row `rows` is an all-zero row.
#if defined(__AVX512F__)
  const avx512::ActVec act_vec(ep ? *ep : Epilogue{});
  const avx512::ActVec* act =
      std::is_same_v<T, float> && ep && !ep->trivial() ? &act_vec : nullptr;
#else
  const void* act = nullptr;
#endif
  ctx.parallel_for(p.n * p.m, OH * OW * K * K, [&](int64_t b, int64_t e) {
    // 64-byte aligned (L is a multiple of 16 elements, so every phase row is too).
    std::vector<T> storage(static_cast<size_t>((rows + 1) * S * L) + 64 / sizeof(T), T(0));
    T* const buf = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t{63});
    // Columns [jlo[q], jhi[q]) of phase q come from the input row; the rest stay zero.
    int64_t jlo[S], jhi[S];
    for (int q = 0; q < S; ++q) {
      // c = j*S + q - pl in [0, W)
      const int64_t lo = pl - q <= 0 ? 0 : (pl - q + S - 1) / S;
      const int64_t hi = W - 1 + pl - q < 0 ? 0 : (W - 1 + pl - q) / S + 1;
      jlo[q] = std::min(lo, L);
      jhi[q] = std::clamp(hi, jlo[q], L);
    }
    // Input rows [0, filled) of channel cur_ic are in buf. Rows are filled just before the first
    // output block that reads them, so a block's rows are still in L1 when it runs.
    int64_t cur_ic = -1, filled = 0;
    const T* xc = nullptr;
    auto fill_rows = [&](int64_t upto_padded_row) {  // fill the phases of input rows h + pt < upto
      const int64_t hend = std::min(H, std::min(upto_padded_row, rows) - pt);
      for (int64_t h = filled; h < hend; ++h) {
        const int64_t r = h + pt;
        const T* __restrict xr = xc + h * W;
        for (int q = 0; q < S; ++q) {
          T* __restrict dst = buf + (r * S + q) * L;
          const int64_t lo = jlo[q], hi = jhi[q], off = q - pl;
          if constexpr (S == 1) {
            std::memcpy(dst + lo, xr + lo + off, static_cast<size_t>(hi - lo) * sizeof(T));
          } else {
#if defined(__AVX512F__)
            if constexpr (std::is_same_v<T, float> && S == 2) {
              // Even elements of 32 loaded from xr + 2*j + off: 16 phase columns per step.
              const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12,
                                                    10, 8, 6, 4, 2, 0);
              for (int64_t j = lo; j < hi; j += 16) {
                const int64_t n = std::min<int64_t>(16, hi - j), need = 2 * n - 1;
                const __mmask16 l0 = need >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << need) - 1);
                const __mmask16 l1 = need <= 16 ? __mmask16(0) : __mmask16((1u << (need - 16)) - 1);
                const float* sp = xr + j * 2 + off;
                const __m512 a = _mm512_maskz_loadu_ps(l0, sp);
                const __m512 c = _mm512_maskz_loadu_ps(l1, sp + 16);
                _mm512_mask_storeu_ps(dst + j, n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1),
                                      _mm512_permutex2var_ps(a, even, c));
              }
              continue;
            }
#endif
            for (int64_t j = lo; j < hi; ++j) dst[j] = xr[j * S + off];
          }
        }
      }
      filled = std::max(filled, hend);
    };
    for (int64_t item = b; item < e; ++item) {
      const int64_t oc = item % p.m, ni = item / p.m, ic = oc / mult;
      const int64_t chan = ni * p.c + ic;
      if (chan != cur_ic) {  // a new channel: its rows are filled as the blocks need them
        cur_ic = chan;
        xc = x + chan * H * W;
        filled = 0;
      }
      T wk[K * K];
      for (int i = 0; i < K * K; ++i) wk[i] = w[oc * K * K + i];
      const T bv = bias ? bias[oc] : T(0);
      T* yc = y + item * OH * OW;
#if defined(__AVX512F__)
      if constexpr (std::is_same_v<T, float>) {
        // R output rows x 16 outputs per step (R independent accumulation chains). The loop runs
        // over the input rows the block reads: each is loaded once as two aligned vectors, the
        // taps' column shifts come from valignd, and the row feeds every output row it is a tap
        // of. Each output still sums bias + taps in (kh, kw) order; the activation is applied
        // in registers (no epilogue pass).
        constexpr int R = 4;
        constexpr int IR = S * (R - 1) + K;  // input rows one block reads
        const __m512 vb = _mm512_set1_ps(bv);
        __m512 wv[K * K];
        for (int i = 0; i < K * K; ++i) wv[i] = _mm512_set1_ps(wk[i]);
        for (int64_t oh0 = 0; oh0 < OH; oh0 += R) {
          const int nr = static_cast<int>(std::min<int64_t>(R, OH - oh0));
          fill_rows(oh0 * S + IR);
          const float* src[IR][S];
          for (int ir = 0; ir < IR; ++ir) {
            int64_t pr = oh0 * S + ir;
            // Padding rows and rows only the unstored outputs (r >= nr) would read: the zero row.
            if (pr < pt || pr >= pt + H || ir >= S * (nr - 1) + K) pr = rows;
            for (int q = 0; q < S; ++q) src[ir][q] = buf + (pr * S + q) * L;
          }
          for (int64_t ow = 0; ow < OW; ow += 16) {
            const __mmask16 m =
                OW - ow >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (OW - ow)) - 1);
            __m512 v[R];
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) v[r] = vb;
#pragma GCC unroll 12
            for (int ir = 0; ir < IR; ++ir) {
              __m512i lo[S], hi[S];
#pragma GCC unroll 2
              for (int q = 0; q < S; ++q) {
                lo[q] = _mm512_load_si512(src[ir][q] + ow);
                hi[q] = _mm512_load_si512(src[ir][q] + ow + 16);
              }
#pragma GCC unroll 5
              for (int kw = 0; kw < K; ++kw) {
                const int q = kw % S, sh = kw / S;
                const __m512 xv = _mm512_castsi512_ps(shift_lanes(lo[q], hi[q], sh));
#pragma GCC unroll 4
                for (int r = 0; r < R; ++r) {
                  const int kh = ir - S * r;
                  if (kh >= 0 && kh < K) v[r] = _mm512_fmadd_ps(wv[kh * K + kw], xv, v[r]);
                }
              }
            }
            if (act) avx512::act_ps_n(v, *act);
            // Full vectors use plain stores: a masked store that misses the cache is several
            // times slower on some cores (the output buffer is usually cold), and the next
            // block's output lines are prefetched for writing.
            if (oh0 + R < OH)
              for (int r = 0; r < R; ++r) __builtin_prefetch(yc + (oh0 + R + r) * OW + ow, 1, 3);
            if (m == __mmask16(0xFFFF)) {
              for (int r = 0; r < nr; ++r) _mm512_storeu_ps(yc + (oh0 + r) * OW + ow, v[r]);
            } else {
              for (int r = 0; r < nr; ++r) _mm512_mask_storeu_ps(yc + (oh0 + r) * OW + ow, m, v[r]);
            }
          }
        }
        continue;
      }
#endif
      fill_rows(rows);
      for (int64_t oh = 0; oh < OH; ++oh) {
        const T* src[K][S];
        for (int kh = 0; kh < K; ++kh) {
          int64_t r = oh * S + kh;
          if (r < pt || r >= pt + H) r = rows;  // padding row: the zero row
          for (int q = 0; q < S; ++q) src[kh][q] = buf + (r * S + q) * L;
        }
        T* __restrict yr = yc + oh * OW;
        for (int64_t ow = 0; ow < OW; ++ow) {
          T v = bv;
#pragma GCC unroll 5
          for (int kh = 0; kh < K; ++kh)
#pragma GCC unroll 5
            for (int kw = 0; kw < K; ++kw) v += wk[kh * K + kw] * src[kh][kw % S][ow + kw / S];
          yr[ow] = v;
        }
      }
      if (ep && !ep->trivial() && !act) apply_epilogue<T>(yc, 1, OH * OW, OH * OW, nullptr, *ep);
    }
  });
}

}  // namespace

template <class T>
bool depthwise_fast(const KernelContext& ctx, const ConvProblem& p, const T* x, const T* w,
                    const T* bias, T* y, const Epilogue* ep) {
  const WindowGeom& g = p.g;
  if (g.nd != 2 || g.in[0] != 1 || g.k[0] != 1 || g.dil[1] != 1 || g.dil[2] != 1) return false;
  if (g.k[1] != g.k[2] || g.stride[1] != g.stride[2]) return false;
  const int64_t k = g.k[1], s = g.stride[1];
  // f32 with channel multiplier 1 (every geometry measured: as fast or faster, up to 3x for
  // stride 2 and 7x7 maps) takes the channels-in-lanes kernel.
  if constexpr (std::is_same_v<T, float>)
    if (depthwise_c16_f32(ctx, p, x, w, bias, y, ep)) return true;
  if (k == 3 && s == 1) run_dw<T, 3, 1>(ctx, p, x, w, bias, y, ep);
  else if (k == 3 && s == 2) run_dw<T, 3, 2>(ctx, p, x, w, bias, y, ep);
  else if (k == 5 && s == 1) run_dw<T, 5, 1>(ctx, p, x, w, bias, y, ep);
  else if (k == 5 && s == 2) run_dw<T, 5, 2>(ctx, p, x, w, bias, y, ep);
  else return false;
  return true;
}

template bool depthwise_fast<float>(const KernelContext&, const ConvProblem&, const float*,
                                    const float*, const float*, float*, const Epilogue*);
template bool depthwise_fast<double>(const KernelContext&, const ConvProblem&, const double*,
                                     const double*, const double*, double*, const Epilogue*);

}  // namespace mcc::backends::cpu
