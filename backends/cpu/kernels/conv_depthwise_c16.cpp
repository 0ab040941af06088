// Channels-in-lanes depthwise Conv (f32, CPUs with AVX-512), a kernel of the depthwise fast path
// (conv_depthwise.cpp decides which geometries take it): 2-D, 3x3 or 5x5, stride 1 or 2 in both
// dims, no dilation, channel multiplier 1, any pads. It runs 16 channels at a time: each input
// row of the 16 channel planes is transposed in registers into per-column 16-channel vectors in a
// zero-padded ring of K rows, so every output is one vector of 16 channels whatever the stride
// or map width (the per-plane kernel deinterleaves stride-2 rows and wastes lanes on narrow
// maps). Each output is bias, then one fused multiply-add per tap in (kh, kw) order, the
// per-plane kernel's values bit for bit, then the epilogue activation in registers; the outputs
// are transposed back to the channel planes 16 positions at a time over the flattened plane, so
// 7x7 maps fill whole vectors too. With fewer channel groups than threads the output rows are
// split into bands as well (depthwise_row_bands), the same values either way.
// Does not apply (returns false): channel multiplier > 1, dilation, other kernel sizes or
// strides, 1-D/3-D, CPUs without AVX-512 (cpu_isa.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/cpu/kernels/depthwise_c16_rows.h"
#if MCC_X86
#include "backends/cpu/kernels/conv_act_avx512.h"
#include "backends/cpu/kernels/transpose_avx512.h"
#endif

namespace mcc::backends::cpu {

#if MCC_X86
MCC_AVX512_BEGIN
namespace {

// Output positions [ow, ow + JB) of one output row: rows[kh] are the ring rows the row reads.
template <int K, int S, int JB>
inline void dw_block(const float* const (&rows)[K], const __m512 (&wv)[K * K], __m512 bv,
                     int64_t ow, const avx512::ActVec* act, float* out) {
  __m512 v[JB];
#pragma GCC unroll 8
  for (int j = 0; j < JB; ++j) v[j] = bv;
#pragma GCC unroll 5
  for (int kh = 0; kh < K; ++kh) {
#pragma GCC unroll 5
    for (int kw = 0; kw < K; ++kw) {
      const float* src = rows[kh] + (ow * S + kw) * 16;
#pragma GCC unroll 8
      for (int j = 0; j < JB; ++j)
        v[j] = _mm512_fmadd_ps(wv[kh * K + kw], _mm512_load_ps(src + j * S * 16), v[j]);
    }
  }
  if (act) avx512::act_ps_n(v, *act);
#pragma GCC unroll 8
  for (int j = 0; j < JB; ++j) _mm512_store_ps(out + (ow + j) * 16, v[j]);
}

template <int K, int S>
void run_c16(const KernelContext& ctx, const ConvProblem& p, const float* x, const float* w,
             const float* bias, float* y, const Epilogue* ep) {
  const WindowGeom& g = p.g;
  const int64_t C = p.c, H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t pt = g.pad_b[1], pl = g.pad_b[2];
  const int64_t WS = std::max((OW - 1) * S + K, pl + W);  // columns of one padded ring row
  const int64_t row_floats = WS * 16, groups = (C + 15) / 16;
  const avx512::ActVec act_vec(ep ? *ep : Epilogue{});
  const avx512::ActVec* act = ep && !ep->trivial() ? &act_vec : nullptr;
  constexpr int JB = K == 3 ? 8 : 4;  // outputs per block: independent accumulation chains
  const int64_t bands = depthwise_row_bands(p.n * groups, OH, ctx.num_threads());
  const int64_t band_rows = (OH + bands - 1) / bands;
  ctx.parallel_for(p.n * groups * bands, band_rows * OW * K * K * 16, [&](int64_t b, int64_t e) {
    // K ring rows, the zero row read for padding rows, then the output positions waiting to be
    // transposed back (at most 15 carried over plus one output row). Padding columns are zeroed
    // here once: the row loads write only the data columns [pl, pl + W).
    const int64_t obuf_px = OW + 16;
    std::vector<float> storage(static_cast<size_t>((K + 1) * row_floats + obuf_px * 16 + 16), 0.f);
    float* const ring =
        reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t{63});
    const float* const zero_row = ring + K * row_floats;
    float* const obuf = ring + (K + 1) * row_floats;
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t item = b; item < e; ++item) {
      const int64_t ni = item / (groups * bands), c0 = (item / bands % groups) * 16;
      const int64_t oh0 = item % bands * band_rows, oh1 = std::min(OH, oh0 + band_rows);
      if (oh0 >= oh1) continue;
      const int64_t nc = std::min<int64_t>(16, C - c0);
      const float* const xg = x + (ni * C + c0) * H * W;
      float* const yg = y + (ni * C + c0) * OH * OW;
      const __mmask16 cm = first_lanes(nc);
      __m512 wv[K * K];
      {
        alignas(64) float wt[K * K][16] = {};
        for (int64_t c = 0; c < nc; ++c)
          for (int t = 0; t < K * K; ++t) wt[t][c] = w[(c0 + c) * K * K + t];
        for (int t = 0; t < K * K; ++t) wv[t] = _mm512_load_ps(wt[t]);
      }
      const __m512 bv = bias ? _mm512_maskz_loadu_ps(cm, bias + c0) : _mm512_setzero_ps();
      // Input row h of the 16 planes into ring slot h % K, column c at (pl + c) * 16.
      auto load_row = [&](int64_t h) {
        float* dst = ring + (h % K) * row_floats + pl * 16;
        const float* src = xg + h * W;
        transpose_channel_rows(
            W, nc,
            [&](int i, int64_t j0, __mmask16 m) {
              return _mm512_castps_si512(_mm512_maskz_loadu_ps(m, src + i * H * W + j0));
            },
            [&](int64_t c, __m512i v) { _mm512_store_si512(dst + c * 16, v); });
      };
      // Output positions [q * 16, q * 16 + cnt) of obuf to flat positions at + q * 16 of the
      // planes.
      auto store_chunk = [&](int64_t q, int64_t cnt, int64_t at) {
        __m512i r[16];
#pragma GCC unroll 16
        for (int t = 0; t < 16; ++t) r[t] = t < cnt ? _mm512_load_si512(obuf + (q * 16 + t) * 16) : zero;
        avx512::transpose_16x16(r);
        store_channel_rows_f32(yg + at + q * 16, OH * OW, nc, cnt, r);
      };
      depthwise_c16_rows<K, S, JB>(
          H, oh0, oh1, OW, pt, ring, row_floats, zero_row, obuf, load_row,
          [&]<int N>(const float* const (&rows)[K], int64_t ow, float* out) {
            dw_block<K, S, N>(rows, wv, bv, ow, act, out);
          },
          store_chunk);
    }
  });
}

bool depthwise_c16_avx512(const KernelContext& ctx, const ConvProblem& p, const float* x,
                          const float* w, const float* bias, float* y, const Epilogue* ep) {
  return depthwise_c16_dispatch(p, [&]<int K, int S>() { run_c16<K, S>(ctx, p, x, w, bias, y, ep); });
}

}  // namespace
MCC_AVX512_END
#endif

bool depthwise_c16_f32(const KernelContext& ctx, const ConvProblem& p, const float* x,
                       const float* w, const float* bias, float* y, const Epilogue* ep) {
#if MCC_X86
  if (cpu_avx512()) return depthwise_c16_avx512(ctx, p, x, w, bias, y, ep);
#endif
  (void)ctx, (void)p, (void)x, (void)w, (void)bias, (void)y, (void)ep;
  return false;
}

}  // namespace mcc::backends::cpu
