// Pooling kernels, 1-D/2-D/3-D, parallel over (N, C) planes:
//   MaxPool (opsets 1, 8, 10, 11, 12, 22): pads, auto_pad, strides, dilations, ceil_mode, optional
//     Indices output (int64, flat over N*C*spatial, storage_order 0 row-major / 1 column-major);
//     dtypes f32, f64, f16, bf16, i8, u8.
//   AveragePool (opsets 1, 7, 10, 11, 19, 22): count_include_pad, ceil_mode, dilations; f32, f64,
//     f16, bf16 (f16/bf16 computed in f32; f32 accumulates in f32, f64 in f64).
//   LpPool (opsets 1, 2, 11, 18, 22) and GlobalLpPool (1, 2, 22): p (float before opset 2, int
//     after); float dtypes as AveragePool.
//   GlobalAveragePool, GlobalMaxPool (opsets 1, 22): float dtypes (f32 averages sum in 16 lanes).
//   MaxUnpool (opsets 9, 11, 22): scatters X into a zero tensor at the flat Indices, output shape
//     from the output_shape input or from kernel/strides/pads; float dtypes.
//   MaxRoiPool (opsets 1, 22): Caffe-style ROI max pooling (rounded ROI corners, floor/ceil bins);
//     float dtypes.
// MaxPool without Indices runs separable 1-D passes; f32 rows with stride 1 take 16 outputs at a
// time on AVX-512 builds, and 2-D pools of arithmetic types skip the staging copies. 2-D f32
// pools whose windows never reach padding run one pass per output row (2x2 stride 2 vectorised).
// Windows that hold no input element (only padding) give the dtype's lowest value for MaxPool
// and 0 for the others. Not supported: more than 3 spatial dims.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/nn_register.h"
#include "ir/errors.h"

namespace mcc::backends::cpu {

namespace {

using ir::DType;

enum class PoolKind { Max, Avg, Lp };

struct PoolAttrs {
  WindowAttrs w;
  PoolKind kind = PoolKind::Max;
  bool count_include_pad = false;
  int64_t storage_order = 0;
  float p = 2.f;
};

// Taps k of one window dim whose position start + k * dil lies in [lo, hi): [first, last).
inline void tap_range(int64_t start, int64_t dil, int64_t K, int64_t lo, int64_t hi, int64_t& first,
                      int64_t& last) {
  first = start >= lo ? 0 : (lo - start + dil - 1) / dil;
  last = start >= hi ? 0 : std::min(K, (hi - 1 - start) / dil + 1);
  if (first > last) first = last;
}

// Calls f(id, ih, iw) for every tap of the window at output position (od, oh, ow) that lies
// inside the input; returns the number of taps inside [-pad_b, in + pad_e).
template <class F>
int64_t for_window(const WindowGeom& g, int64_t od, int64_t oh, int64_t ow, F&& f) {
  const int64_t o[3] = {od, oh, ow};
  int64_t first[3], last[3], padded = 1;
  for (int j = 0; j < 3; ++j) {
    const int64_t start = o[j] * g.stride[j] - g.pad_b[j];
    int64_t pf, pl;
    tap_range(start, g.dil[j], g.k[j], -g.pad_b[j], g.in[j] + g.pad_e[j], pf, pl);
    padded *= pl - pf;
    tap_range(start, g.dil[j], g.k[j], 0, g.in[j], first[j], last[j]);
    first[j] = start + first[j] * g.dil[j];  // as input coordinates from here on
    last[j] = start + last[j] * g.dil[j];
  }
  for (int64_t id = first[0]; id < last[0]; id += g.dil[0])
    for (int64_t ih = first[1]; ih < last[1]; ih += g.dil[1])
      for (int64_t iw = first[2]; iw < last[2]; iw += g.dil[2]) f(id, ih, iw);
  return padded;
}

template <class T>
void pool_planes(const KernelContext& ctx, const PoolAttrs& a, const WindowGeom& g, int64_t planes,
                 const T* x, T* y, int64_t* indices) {
  using A = std::conditional_t<std::is_arithmetic_v<T>, T, float>;
  const int64_t IP = g.in_size(), OP = g.out_size(), H = g.in[1], W = g.in[2], D = g.in[0];
  ctx.parallel_for(planes, OP * g.k_size(), [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const T* xp = x + pl * IP;
      T* yp = y + pl * OP;
      int64_t o = 0;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
            if (a.kind == PoolKind::Max) {
              A best = std::numeric_limits<A>::lowest();
              int64_t bi = -1;
              for_window(g, od, oh, ow, [&](int64_t id, int64_t ih, int64_t iw) {
                const int64_t off = (id * H + ih) * W + iw;
                const A v = static_cast<A>(xp[off]);
                if (bi < 0 || v > best) {
                  best = v;
                  bi = a.storage_order ? id + D * (ih + H * iw) : off;
                }
              });
              yp[o] = static_cast<T>(best);
              if (indices) indices[pl * OP + o] = pl * IP + std::max<int64_t>(bi, 0);
            } else {
              using S = acc_t<T>;
              S sum = 0;
              int64_t n_valid = 0;
              const int64_t n_padded =
                  for_window(g, od, oh, ow, [&](int64_t id, int64_t ih, int64_t iw) {
                    const S v = cvt<S>(xp[(id * H + ih) * W + iw]);
                    if (a.kind == PoolKind::Avg)
                      sum += v;
                    else if (a.p == 1.f)
                      sum += std::abs(v);
                    else if (a.p == 2.f)
                      sum += v * v;
                    else
                      sum += std::pow(std::abs(v), static_cast<S>(a.p));
                    ++n_valid;
                  });
              S r;
              if (a.kind == PoolKind::Avg) {
                const int64_t cnt = a.count_include_pad ? n_padded : n_valid;
                r = cnt > 0 ? sum / static_cast<S>(cnt) : S(0);
              } else {
                r = a.p == 1.f   ? sum
                    : a.p == 2.f ? std::sqrt(sum)
                                 : std::pow(sum, static_cast<S>(1.f / a.p));
              }
              yp[o] = static_cast<T>(r);
            }
          }
    }
  });
}

#if MCC_X86
MCC_AVX512_BEGIN
// f32 rows (inner == 1) with stride 1: each row is copied between runs of `lowest` (a padded
// tap then never wins, as a skipped tap), and 16 outputs take their K taps at a time;
// max_ps(src, acc) keeps std::max(acc, src)'s result, NaN handling included.
// Stride 2 gathers every second element of two loaded vectors with one permute.
// False (nothing written) for the shapes it does not take.
bool max_axis_f32_avx512(const float* in, float* out, int64_t outer, int64_t n_in, int64_t inner,
                         int64_t n_out, int64_t stride, int64_t pad_b, int64_t dil, int64_t K) {
  if (inner == 1 && (stride == 1 || stride == 2) && pad_b >= 0) {
    const float low = std::numeric_limits<float>::lowest();
    const int64_t span = (K - 1) * dil;
    static thread_local std::vector<float> buf;
    const size_t need = static_cast<size_t>(pad_b + n_in + span + stride * n_out + 32);
    if (buf.size() < need) buf.resize(need);
    std::fill(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(need), low);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    float* const bp = buf.data();
    for (int64_t o = 0; o < outer; ++o) {
      std::copy(in + o * n_in, in + (o + 1) * n_in, bp + pad_b);
      float* dst = out + o * n_out;
      for (int64_t j = 0; j < n_out; j += 16) {
        const __mmask16 m =
            n_out - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n_out - j)) - 1);
        __m512 v = _mm512_set1_ps(low);
        for (int64_t k = 0; k < K; ++k) {
          // Taps past the row's end (pad_e or beyond) read `lowest`, like skipped taps.
          const float* t = bp + stride * j + k * dil;
          const __m512 tap = stride == 1 ? _mm512_loadu_ps(t)
                                         : _mm512_permutex2var_ps(_mm512_loadu_ps(t), even, _mm512_loadu_ps(t + 16));
          v = _mm512_max_ps(tap, v);
        }
        _mm512_mask_storeu_ps(dst + j, m, v);
      }
    }
    return true;
  }
  if (inner >= 8) {  // rows of `inner` values: max_ps(src, dst) keeps std::max(dst, src)
    const __m512 lv = _mm512_set1_ps(std::numeric_limits<float>::lowest());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n_out; ++j) {
        float* dst = out + (o * n_out + j) * inner;
        const int64_t start = j * stride - pad_b;
        int64_t first, last;
        tap_range(start, dil, K, 0, n_in, first, last);
        for (int64_t i = 0; i < inner; i += 16) {
          const __mmask16 m = inner - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (inner - i)) - 1);
          __m512 v = lv;
          for (int64_t k = first; k < last; ++k)
            v = _mm512_max_ps(_mm512_maskz_loadu_ps(m, in + (o * n_in + start + k * dil) * inner + i), v);
          _mm512_mask_storeu_ps(dst + i, m, v);
        }
      }
    return true;
  }
  return false;
}
MCC_AVX512_END
#endif

// Max over the taps of a 1-D window along the middle axis of [outer, n_in, inner] into
// [outer, n_out, inner]; taps outside the input are skipped (an all-padding window gives lowest).
template <class A>
void max_axis(const A* in, A* out, int64_t outer, int64_t n_in, int64_t inner, int64_t n_out,
              int64_t stride, int64_t pad_b, int64_t dil, int64_t K) {
#if MCC_X86
  if constexpr (std::is_same_v<A, float>) {
    if (cpu_avx512() && max_axis_f32_avx512(in, out, outer, n_in, inner, n_out, stride, pad_b, dil, K))
      return;
  }
#endif
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n_out; ++j) {
      A* dst = out + (o * n_out + j) * inner;
      std::fill(dst, dst + inner, std::numeric_limits<A>::lowest());
      const int64_t start = j * stride - pad_b;
      int64_t first, last;
      tap_range(start, dil, K, 0, n_in, first, last);
      for (int64_t k = first; k < last; ++k) {
        const A* src = in + (o * n_in + start + k * dil) * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] = std::max(dst[i], src[i]);
      }
    }
}

#if MCC_X86
MCC_AVX512_BEGIN
// One output row of a 2x2, stride-2 f32 MaxPool inside the input, 16 outputs at a time: the
// outputs [0, OW) of rows xr, xr + W into yr (the folds of max_pool_2d_inside).
void max_2x2_s2_row_avx512(const float* xr, int64_t W, float* yr, int64_t OW) {
  const float low = std::numeric_limits<float>::lowest();
  int64_t ow = 0;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512 lv = _mm512_set1_ps(low);
  for (; ow < OW; ow += 16) {
    const int64_t n = std::min<int64_t>(16, OW - ow);  // outputs; 2n inputs per row
    const __mmask16 m_out = static_cast<__mmask16>((1u << n) - 1);
    const __mmask16 m_lo = static_cast<__mmask16>(n >= 8 ? 0xFFFF : (1u << (2 * n)) - 1);
    const __mmask16 m_hi = static_cast<__mmask16>(n <= 8 ? 0 : (1u << (2 * n - 16)) - 1);
    __m512 h[2];
    for (int k = 0; k < 2; ++k) {
      const float* src = xr + k * W + 2 * ow;
      const __m512 a = _mm512_maskz_loadu_ps(m_lo, src), c = _mm512_maskz_loadu_ps(m_hi, src + 16);
      h[k] = _mm512_max_ps(_mm512_permutex2var_ps(a, odd, c), _mm512_max_ps(_mm512_permutex2var_ps(a, even, c), lv));
    }
    _mm512_mask_storeu_ps(yr + ow, m_out, _mm512_max_ps(h[1], _mm512_max_ps(h[0], lv)));
  }
}
MCC_AVX512_END
#endif

// 2-D f32 MaxPool whose windows all lie inside the input (no padding reached), one output row at
// a time without staging buffers. Each window folds as max_axis does (its W taps, then its H
// taps, each fold from lowest with max_ps(tap, acc)), so results equal the separable passes bit
// for bit, NaN included. 2x2 windows with stride 2 take 16 outputs at a time on AVX-512 builds.
// Returns false (nothing written) when a window would reach padding.
bool max_pool_2d_inside(const KernelContext& ctx, const WindowGeom& g, int64_t planes, const float* x, float* y) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t KH = g.k[1], KW = g.k[2], sh = g.stride[1], sw = g.stride[2], dh = g.dil[1], dw = g.dil[2];
  if (g.in[0] != 1 || g.out[0] != 1 || g.k[0] != 1 || g.pad_b[1] != 0 || g.pad_b[2] != 0) return false;
  if (OH < 1 || OW < 1 || (OH - 1) * sh + (KH - 1) * dh >= H || (OW - 1) * sw + (KW - 1) * dw >= W) return false;
  const float low = std::numeric_limits<float>::lowest();
  const auto fold = [](float acc, float tap) { return tap > acc ? tap : acc; };  // max_ps(tap, acc)
  ctx.parallel_for(planes * OH, W * KH * 2, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t pl = r / OH, oh = r % OH;
      const float* xr = x + pl * H * W + oh * sh * W;
      float* yr = y + pl * OH * OW + oh * OW;
      int64_t ow = 0;
#if MCC_X86
      if (KH == 2 && KW == 2 && sh == 2 && sw == 2 && dh == 1 && dw == 1 && cpu_avx512()) {
        max_2x2_s2_row_avx512(xr, W, yr, OW);
        continue;
      }
#endif
      for (; ow < OW; ++ow) {
        float v = low;
        for (int64_t kh = 0; kh < KH; ++kh) {
          const float* t = xr + kh * dh * W + ow * sw;
          float hv = low;
          for (int64_t kw = 0; kw < KW; ++kw) hv = fold(hv, t[kw * dw]);
          v = fold(v, hv);
        }
        yr[ow] = v;
      }
    }
  });
  return true;
}

// MaxPool without Indices as three separable 1-D passes (W, then H, then D) per plane.
template <class T>
void max_pool_separable(const KernelContext& ctx, const WindowGeom& g, int64_t planes, const T* x,
                        T* y) {
  using A = std::conditional_t<std::is_arithmetic_v<T>, T, float>;
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  if constexpr (std::is_same_v<T, float>)
    if (max_pool_2d_inside(ctx, g, planes, x, y)) return;
  ctx.parallel_for(planes, g.in_size() * (g.k[0] + g.k[1] + g.k[2]), [&](int64_t b, int64_t e) {
    static thread_local std::vector<A> t1;
    if (t1.size() < static_cast<size_t>(D * H * OW)) t1.resize(static_cast<size_t>(D * H * OW));
    std::vector<A> src, t2, t3;  // staging for the 3-D and converted cases only
    for (int64_t pl = b; pl < e; ++pl) {
      const T* xp = x + pl * g.in_size();
      if constexpr (std::is_same_v<T, A>) {
        // 2-D pools of arithmetic types read the input and write the output in place.
        if (D == 1 && OD == 1 && g.k[0] == 1) {
          max_axis(xp, t1.data(), H, W, 1, OW, g.stride[2], g.pad_b[2], g.dil[2], g.k[2]);
          max_axis(t1.data(), y + pl * g.out_size(), 1, H, OW, OH, g.stride[1], g.pad_b[1],
                   g.dil[1], g.k[1]);
          continue;
        }
      }
      if (src.empty()) {
        src.resize(static_cast<size_t>(g.in_size()));
        t2.resize(static_cast<size_t>(D * OH * OW));
        t3.resize(static_cast<size_t>(OD * OH * OW));
      }
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<A>(xp[i]);
      max_axis(src.data(), t1.data(), D * H, W, 1, OW, g.stride[2], g.pad_b[2], g.dil[2], g.k[2]);
      max_axis(t1.data(), t2.data(), D, H, OW, OH, g.stride[1], g.pad_b[1], g.dil[1], g.k[1]);
      max_axis(t2.data(), t3.data(), 1, D, OH * OW, OD, g.stride[0], g.pad_b[0], g.dil[0], g.k[0]);
      T* yp = y + pl * g.out_size();
      for (size_t i = 0; i < t3.size(); ++i) yp[i] = static_cast<T>(t3[i]);
    }
  });
}

float lp_p(const ir::Node& n) {
  const ir::Attribute* at = n.attr("p");
  if (!at) return 2.f;
  if (at->kind == ir::AttrKind::Float) return n.attr_float("p", 2.f);
  return static_cast<float>(n.attr_int("p", 2));
}

Kernel make_pool(const ir::Node& node, PoolKind kind) {
  PoolAttrs a;
  a.w = WindowAttrs::parse(node);
  a.kind = kind;
  a.count_include_pad = node.attr_int("count_include_pad", 0) != 0;
  a.storage_order = node.attr_int("storage_order", 0);
  if (kind == PoolKind::Lp) a.p = lp_p(node);
  if (a.w.kernel_shape.empty()) throw ModelError(node.describe() + ": kernel_shape is required");
  if (a.p <= 0) throw ModelError(node.describe() + ": p must be positive");
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const WindowGeom g = conv_geometry(n, a.w, x.dims(), a.w.kernel_shape, true);
    const int64_t N = x.dims()[0], C = x.dims()[1];
    ir::Tensor& y = ctx.alloc_output_overwritten(0, x.dtype(), g.out_dims(N, C));  // every element is written
    int64_t* idx = nullptr;
    if (a.kind == PoolKind::Max && ctx.num_outputs() > 1 && ctx.wants_output(1))
      idx = ctx.alloc_output(1, DType::I64, g.out_dims(N, C)).mutable_data<int64_t>().data();
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (a.kind == PoolKind::Max && !idx) {
        max_pool_separable<T>(ctx, g, N * C, x.data<T>().data(), y.mutable_data<T>().data());
        return;
      }
      pool_planes<T>(ctx, a, g, N * C, x.data<T>().data(), y.mutable_data<T>().data(), idx);
    };
    const std::string what = n.describe() + ": " + n.op_type;
    if (a.kind == PoolKind::Max)
      ir::dispatch<MCC_FLOAT_DTYPES, DType::I8, DType::U8>(x.dtype(), what, run);
    else
      ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), what, run);
  };
}

// Sum of n floats in 16 interleaved lanes (lane k adds elements k, k + 16, ...; the lanes are then
// added pairwise, 8 + 8, 4 + 4, 2 + 2, 1 + 1), so the sum is not one serial chain of dependent
// adds. The scalar and AVX-512 paths add in the same order: same result on every build.
#if MCC_X86
MCC_AVX512_BEGIN
// Lanes of sum_f32_lanes over the first n / 16 * 16 floats; returns how many were added.
int64_t sum_lanes_avx512(const float* x, int64_t n, float* lane) {
  int64_t i = 0;
  __m512 acc = _mm512_setzero_ps();
  for (; i + 16 <= n; i += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(x + i));
  _mm512_storeu_ps(lane, acc);
  return i;
}
MCC_AVX512_END
#endif

float sum_f32_lanes(const float* x, int64_t n) {
  float lane[16] = {};
  int64_t i = 0;
#if MCC_X86
  if (cpu_avx512()) i = sum_lanes_avx512(x, n, lane);
#endif
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; ++k) lane[k] += x[i + k];
  for (int k = 0; i < n; ++i, ++k) lane[k] += x[i];
  for (int w = 8; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) lane[k] += lane[k + w];
  return lane[0];
}

Kernel make_global_pool(const ir::Node& node, PoolKind kind) {
  const float p = kind == PoolKind::Lp ? lp_p(node) : 2.f;
  return [kind, p](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() < 2) throw ModelError(n.describe() + ": input must have rank >= 2");
    std::vector<int64_t> od = x.dims();
    int64_t S = 1;
    for (size_t i = 2; i < od.size(); ++i) {
      S *= od[i];
      od[i] = 1;
    }
    const int64_t planes = od[0] * od[1];
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), od);
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": " + n.op_type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      const T* xp = x.data<T>().data();
      T* yp = y.mutable_data<T>().data();
      ctx.parallel_for(planes, S, [&](int64_t b, int64_t e) {
        for (int64_t pl = b; pl < e; ++pl) {
          const T* s = xp + pl * S;
          A r;
          if (kind == PoolKind::Max) {
            r = S ? cvt<A>(s[0]) : A(0);
            for (int64_t i = 1; i < S; ++i) r = std::max(r, cvt<A>(s[i]));
          } else if (kind == PoolKind::Avg) {
            A sum;
            if constexpr (std::is_same_v<T, float>) sum = sum_f32_lanes(s, S);
            else {
              sum = 0;
              for (int64_t i = 0; i < S; ++i) sum += cvt<A>(s[i]);
            }
            r = S ? sum / static_cast<A>(S) : A(0);
          } else {
            A sum = 0;
            for (int64_t i = 0; i < S; ++i)
              sum += std::pow(std::abs(cvt<A>(s[i])), static_cast<A>(p));
            r = std::pow(sum, static_cast<A>(1.f / p));
          }
          yp[pl] = static_cast<T>(r);
        }
      });
    });
  };
}

Kernel make_max_unpool(const ir::Node& node) {
  const WindowAttrs a = WindowAttrs::parse(node);
  if (a.kernel_shape.empty()) throw ModelError(node.describe() + ": kernel_shape is required");
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const auto ind = read_int_tensor(n, ctx.in(1), "I");
    if (static_cast<int64_t>(ind.size()) != x.numel())
      throw ModelError(n.describe() + ": I must have the shape of X");
    const size_t nd = a.kernel_shape.size();
    if (x.rank() != nd + 2) throw ModelError(n.describe() + ": X rank does not match kernel_shape");
    // Indices address the default output (from kernel, strides and pads); an output_shape input
    // pads that tensor, so each index is re-based onto the requested shape.
    std::vector<int64_t> def{x.dims()[0], x.dims()[1]};
    for (size_t i = 0; i < nd; ++i) {
      const int64_t s = a.strides.empty() ? 1 : a.strides[i];
      const int64_t pb = a.pads.empty() ? 0 : a.pads[i], pe = a.pads.empty() ? 0 : a.pads[nd + i];
      def.push_back((x.dims()[2 + i] - 1) * s + a.kernel_shape[i] - pb - pe);
    }
    std::vector<int64_t> od = def;
    if (ctx.has_input(2)) {
      od = read_int_tensor(n, ctx.in(2), "output_shape");
      if (od.size() != x.rank())
        throw ModelError(n.describe() + ": output_shape must have X's rank");
    }
    int64_t def_total = 1;
    for (int64_t d : def) def_total *= d;
    const auto out_strides = contiguous_strides(od);
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), od);
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": MaxUnpool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto xs = x.data<T>();
      auto ys = y.mutable_data<T>();
      std::fill(ys.begin(), ys.end(), T(0));
      for (size_t i = 0; i < ind.size(); ++i) {
        if (ind[i] < 0 || ind[i] >= def_total)
          throw ModelError(n.describe() + ": index " + std::to_string(ind[i]) +
                           " is outside the output");
        int64_t rest = ind[i], off = 0;
        bool inside = true;
        for (size_t d = def.size(); d-- > 0;) {
          const int64_t c = rest % def[d];
          rest /= def[d];
          inside = inside && c < od[d];
          off += c * out_strides[d];
        }
        if (inside) ys[static_cast<size_t>(off)] = xs[i];
      }
    });
  };
}

Kernel make_max_roi_pool(const ir::Node& node) {
  const auto pooled = node.attr_ints("pooled_shape");
  const float scale = node.attr_float("spatial_scale", 1.f);
  if (pooled.size() != 2 || pooled[0] <= 0 || pooled[1] <= 0)
    throw ModelError(node.describe() + ": pooled_shape must hold 2 positive values");
  return [pooled, scale](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const ir::Tensor& rois = ctx.in(1);
    if (x.rank() != 4) throw ModelError(n.describe() + ": X must be 4-D");
    if (rois.rank() != 2 || rois.dims()[1] != 5)
      throw ModelError(n.describe() + ": rois must be [num_rois, 5]");
    const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2], W = x.dims()[3],
                  R = rois.dims()[0];
    const int64_t PH = pooled[0], PW = pooled[1];
    const auto rv = read_float_tensor(n, rois, "rois");
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), {R, C, PH, PW});
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": MaxRoiPool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xp = x.data<T>().data();
      T* yp = y.mutable_data<T>().data();
      for (int64_t r = 0; r < R; ++r) {
        const float* roi = rv.data() + r * 5;
        const auto bi = static_cast<int64_t>(roi[0]);
        if (bi < 0 || bi >= N) throw ModelError(n.describe() + ": roi batch index out of range");
        const auto sw = static_cast<int64_t>(std::round(roi[1] * scale)),
                   sh = static_cast<int64_t>(std::round(roi[2] * scale));
        const auto ew = static_cast<int64_t>(std::round(roi[3] * scale)),
                   eh = static_cast<int64_t>(std::round(roi[4] * scale));
        const float bin_h =
            static_cast<float>(std::max<int64_t>(eh - sh + 1, 1)) / static_cast<float>(PH);
        const float bin_w =
            static_cast<float>(std::max<int64_t>(ew - sw + 1, 1)) / static_cast<float>(PW);
        for (int64_t c = 0; c < C; ++c) {
          const T* plane = xp + (bi * C + c) * H * W;
          for (int64_t ph = 0; ph < PH; ++ph)
            for (int64_t pw = 0; pw < PW; ++pw) {
              const int64_t hs =
                  std::clamp<int64_t>(static_cast<int64_t>(std::floor(ph * bin_h)) + sh, 0, H);
              const int64_t he =
                  std::clamp<int64_t>(static_cast<int64_t>(std::ceil((ph + 1) * bin_h)) + sh, 0, H);
              const int64_t ws =
                  std::clamp<int64_t>(static_cast<int64_t>(std::floor(pw * bin_w)) + sw, 0, W);
              const int64_t we =
                  std::clamp<int64_t>(static_cast<int64_t>(std::ceil((pw + 1) * bin_w)) + sw, 0, W);
              float best = 0;
              bool any = false;
              for (int64_t h = hs; h < he; ++h)
                for (int64_t w = ws; w < we; ++w) {
                  const float v = cvt<float>(plane[h * W + w]);
                  if (!any || v > best) {
                    best = v;
                    any = true;
                  }
                }
              yp[((r * C + c) * PH + ph) * PW + pw] = static_cast<T>(best);
            }
        }
      }
    });
  };
}

}  // namespace

void register_pool(KernelRegistry& r) {
  r.add("MaxPool", 1, 0, [](const ir::Node& n) { return make_pool(n, PoolKind::Max); });
  r.add("AveragePool", 1, 0, [](const ir::Node& n) { return make_pool(n, PoolKind::Avg); });
  r.add("LpPool", 1, 0, [](const ir::Node& n) { return make_pool(n, PoolKind::Lp); });
  r.add("GlobalAveragePool", 1, 0,
        [](const ir::Node& n) { return make_global_pool(n, PoolKind::Avg); });
  r.add("GlobalMaxPool", 1, 0,
        [](const ir::Node& n) { return make_global_pool(n, PoolKind::Max); });
  r.add("GlobalLpPool", 1, 0, [](const ir::Node& n) { return make_global_pool(n, PoolKind::Lp); });
  r.add("MaxUnpool", 9, 0, make_max_unpool);
  r.add("MaxRoiPool", 1, 0, make_max_roi_pool);
}

}  // namespace mcc::backends::cpu
