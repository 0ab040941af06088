// Depthwise Conv fast path (part of Conv, ONNX opsets 1, 11, 22; see conv.cpp): 2-D, square
// 3x3 or 5x5 kernels, stride 1 or 2 in both dims, no dilation, any pads and channel multiplier.
// dtypes: f32 and f64, accumulated in the input type. Each channel's input rows are copied once
// into zero-padded column phases (column j*S + q of the padded row goes to phase q, column j), so
// every tap of every output row reads a contiguous run and the output row is computed in one
// vectorised pass with the K*K weights in registers; out-of-range rows read a zero row. Each
// output is bias + taps summed in (kh, kw) order, the same order for every thread count. On
// AVX-512 builds f32 outputs are computed 4 rows x 16 outputs at a time with fused multiply-adds and the
// epilogue activation applied in registers.
// Everything else (dilations, other kernel sizes or strides, 1-D/3-D) returns false and takes the
// general depthwise loop in conv.cpp.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#if defined(__AVX512F__)
#include "backends/cpu/kernels/conv_act_avx512.h"
#endif

namespace mcc::backends::cpu {

namespace {

template <class T, int K, int S>
void run_dw(const KernelContext& ctx, const ConvProblem& p, const T* x, const T* w, const T* bias,
            T* y, const Epilogue* ep) {
  const WindowGeom& g = p.g;
  const int64_t mult = p.m / p.group;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t pt = g.pad_b[1], pl = g.pad_b[2];
  const int64_t L = OW + K;                         // columns of one phase row (with slack)
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
    std::vector<T> buf(static_cast<size_t>((rows + 1) * S * L), T(0));
    // Columns [jlo[q], jhi[q]) of phase q come from the input row; the rest stay zero.
    int64_t jlo[S], jhi[S];
    for (int q = 0; q < S; ++q) {
      // c = j*S + q - pl in [0, W)
      const int64_t lo = pl - q <= 0 ? 0 : (pl - q + S - 1) / S;
      const int64_t hi = W - 1 + pl - q < 0 ? 0 : (W - 1 + pl - q) / S + 1;
      jlo[q] = std::min(lo, L);
      jhi[q] = std::clamp(hi, jlo[q], L);
    }
    int64_t cur_ic = -1;
    for (int64_t item = b; item < e; ++item) {
      const int64_t oc = item % p.m, ni = item / p.m, ic = oc / mult;
      const int64_t chan = ni * p.c + ic;
      if (chan != cur_ic) {  // fill the phases of every input row (zeros elsewhere stay zero)
        cur_ic = chan;
        const T* xc = x + chan * H * W;
        for (int64_t h = 0; h < H; ++h) {
          const int64_t r = h + pt;
          if (r >= rows) break;
          const T* __restrict xr = xc + h * W;
          for (int q = 0; q < S; ++q) {
            T* __restrict dst = buf.data() + (r * S + q) * L;
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
      }
      T wk[K * K];
      for (int i = 0; i < K * K; ++i) wk[i] = w[oc * K * K + i];
      const T bv = bias ? bias[oc] : T(0);
      T* yc = y + item * OH * OW;
#if defined(__AVX512F__)
      if constexpr (std::is_same_v<T, float>) {
        // 4 output rows x 16 outputs per step (4 independent accumulation chains), the K*K taps
        // in (kh, kw) order on bias, the activation in registers (no epilogue pass).
        constexpr int R = 4;
        const __m512 vb = _mm512_set1_ps(bv);
        for (int64_t oh0 = 0; oh0 < OH; oh0 += R) {
          const int nr = static_cast<int>(std::min<int64_t>(R, OH - oh0));
          const float* src[R][K][S];
          for (int r = 0; r < R; ++r)
            for (int kh = 0; kh < K; ++kh) {
              // Rows past the output (r >= nr) repeat row 0; they are computed, not stored.
              int64_t pr = (oh0 + (r < nr ? r : 0)) * S + kh;
              if (pr < pt || pr >= pt + H) pr = rows;  // padding row: the zero row
              for (int q = 0; q < S; ++q) src[r][kh][q] = buf.data() + (pr * S + q) * L;
            }
          for (int64_t ow = 0; ow < OW; ow += 16) {
            const __mmask16 m =
                OW - ow >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (OW - ow)) - 1);
            __m512 v[R];
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) v[r] = vb;
#pragma GCC unroll 5
            for (int kh = 0; kh < K; ++kh)
#pragma GCC unroll 5
              for (int kw = 0; kw < K; ++kw) {
                const __m512 wv = _mm512_set1_ps(wk[kh * K + kw]);
#pragma GCC unroll 4
                for (int r = 0; r < R; ++r)
                  v[r] = _mm512_fmadd_ps(
                      wv, _mm512_maskz_loadu_ps(m, src[r][kh][kw % S] + ow + kw / S), v[r]);
              }
            if (act) avx512::act_ps_n(v, *act);
            for (int r = 0; r < nr; ++r) _mm512_mask_storeu_ps(yc + (oh0 + r) * OW + ow, m, v[r]);
          }
        }
        continue;
      }
#endif
      for (int64_t oh = 0; oh < OH; ++oh) {
        const T* src[K][S];
        for (int kh = 0; kh < K; ++kh) {
          int64_t r = oh * S + kh;
          if (r < pt || r >= pt + H) r = rows;  // padding row: the zero row
          for (int q = 0; q < S; ++q) src[kh][q] = buf.data() + (r * S + q) * L;
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
