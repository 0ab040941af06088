// Channels-in-lanes depthwise conv of the QDQ conv fusion (builds with AVX-512 VNNI and VBMI):
// 2-D, 3x3 or 5x5, stride 1 or 2 in both dims, no dilation, channel multiplier 1, any pads, u8 x.
// 16 channels at a time: each u8 input row of the 16 planes is transposed in registers into
// 16-byte columns (one byte per channel) in a ring of K rows padded with x_zero. For each output
// position and kernel row, one vpermb gathers 4 consecutive columns into each channel's 32-bit
// lane and one vpdpbusd adds their 4 products with the s8 weights (3 instructions per 3x3 output
// vector instead of 9 f32 multiply-adds); sum(w * x) - x_zero * sum(w) is the exact integer the
// per-channel kernel sums, so the results equal its results. Then * scale + bias, the activation
// and the quantization with per-channel parameters in the lanes; the s32 (or f32) results are
// transposed back to the channel planes 16 positions at a time over the flattened plane and
// narrowed with saturation to u8/s8. With fewer channel groups than threads the output rows are
// split into bands as well (depthwise_row_bands), the same values either way.
// Does not apply (returns false): other kernel sizes or strides, dilation, channel multiplier
// > 1, builds without VNNI/VBMI, int8 SIMD switched off; qdq_conv_fusion.cpp's per-channel kernel
// runs those.
#include "backends/cpu/kernels/qdq_depthwise_c16.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/depthwise_c16_rows.h"
#include "backends/cpu/kernels/int8_gemm.h"
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__AVX512VBMI__)
#define MCC_QDQ_DW_C16 1
#endif
#ifdef MCC_QDQ_DW_C16
#include "backends/cpu/kernels/qdq_epilogue_avx512.h"
#include "backends/cpu/kernels/transpose_avx512.h"
#include "backends/cpu/kernels/vnni_avx512.h"
#endif

namespace mcc::backends::cpu {

#ifdef MCC_QDQ_DW_C16
namespace {

// The 16 channels' lanes of one group: scale, bias, y quantization parameters.
struct Lanes {
  __m512 scale, bias, inv;
  __m512i yz;
};

// Output positions [ow, ow + JB) of one output row into out (16 floats each): the tap sums,
// less x_zero * sum(w), then * scale + bias. rows[kh] are the ring rows the output row reads; each
// quad of taps of a row is one vpermb (lane i gets the 4 columns' bytes of channel i) and one
// vpdpbusd (u8 x s8, 4 products summed into s32 exactly).
template <int K, int S, int JB>
inline void block(const uint8_t* const (&rows)[K], const __m512i (&wq)[K][(K + 3) / 4], __m512i neg_corr,
                  const Lanes& l, int64_t ow, float* out) {
  constexpr int NQ = (K + 3) / 4;
  // byte 4i + k <- byte 16k + i: column k of channel i
  const __m512i idx = _mm512_set_epi32(0x3f2f1f0f, 0x3e2e1e0e, 0x3d2d1d0d, 0x3c2c1c0c, 0x3b2b1b0b, 0x3a2a1a0a,
                                       0x39291909, 0x38281808, 0x37271707, 0x36261606, 0x35251505, 0x34241404,
                                       0x33231303, 0x32221202, 0x31211101, 0x30201000);
  __m512i v[JB];
#pragma GCC unroll 8
  for (int j = 0; j < JB; ++j) v[j] = neg_corr;  // the sums start at -x_zero * sum(w)
#pragma GCC unroll 5
  for (int kh = 0; kh < K; ++kh) {
#pragma GCC unroll 2
    for (int qd = 0; qd < NQ; ++qd) {
      const uint8_t* src = rows[kh] + (ow * S + 4 * qd) * 16;
#pragma GCC unroll 8
      for (int j = 0; j < JB; ++j) {
        const __m512i xq = _mm512_permutexvar_epi8(idx, _mm512_loadu_si512(src + j * S * 16));
        v[j] = avx512::dpbusd(v[j], xq, wq[kh][qd]);
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < JB; ++j)
    _mm512_store_ps(out + (ow + j) * 16,
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(v[j]), l.scale, l.bias));
}

// cnt (<= 16) positions of obuf, activated and quantized (or kept f32) in channel lanes, then
// transposed into r: r[i] holds channel i's cnt positions. Eight positions at a time, their
// activations interleaved (positions past cnt read as 0 and are never stored).
template <Epilogue::Act Act, bool Clamp, bool InRange>
void finish_chunk(const float* obuf, int64_t cnt, const QdqDepthwise& q, const Lanes& l,
                  __m512i (&r)[16]) {
  const bool u8 = q.out_u8;
  for (int t0 = 0; t0 < 16; t0 += 8) {
    if (t0 >= cnt) {
      for (int t = t0; t < 16; ++t) r[t] = _mm512_setzero_si512();
      break;
    }
    __m512 v[8];
    for (int t = 0; t < 8; ++t) v[t] = t0 + t < cnt ? _mm512_load_ps(obuf + (t0 + t) * 16) : _mm512_setzero_ps();
    avx512::qdq_act16_n<Act, 8, InRange>(v, q.ep);
    for (int t = 0; t < 8; ++t)
      r[t0 + t] = q.quant_out ? avx512::qdq_quantize16<Clamp>(v[t], l.inv, l.yz, u8) : _mm512_castps_si512(v[t]);
  }
  avx512::transpose_16x16(r);
}

void finish(const float* obuf, int64_t cnt, const QdqDepthwise& q, const Lanes& l, __m512i (&r)[16]) {
  avx512::with_qdq_epilogue(q.ep, q.quant_clamp, q.silu_in_range, [&]<Epilogue::Act Act, bool Clamp, bool InRange>() {
    finish_chunk<Act, Clamp, InRange>(obuf, cnt, q, l, r);
  });
}

template <int K, int S>
void run(const KernelContext& ctx, const ConvProblem& p, const QdqDepthwise& q, const uint8_t* x,
         std::byte* y) {
  const WindowGeom& g = p.g;
  const int64_t C = p.c, H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t pt = g.pad_b[1], pl = g.pad_b[2];
  constexpr int NQ = (K + 3) / 4;  // tap quads per kernel row
  // Columns of one padded ring row: every quad read (4 columns from (OW - 1) * S + 4 * (NQ - 1))
  // stays inside.
  const int64_t WS = std::max((OW - 1) * S + 4 * NQ, pl + W);
  const int64_t row_bytes = WS * 16, groups = (C + 15) / 16, plane = OH * OW;
  const size_t out_size = q.quant_out ? 1 : sizeof(float);
  constexpr int JB = 8;  // outputs per block: independent accumulation chains
  const int64_t bands = depthwise_row_bands(p.n * groups, OH, ctx.num_threads());
  const int64_t band_rows = (OH + bands - 1) / bands;
  ctx.parallel_for(p.n * groups * bands, band_rows * OW * K * NQ * 16, [&](int64_t b, int64_t e) {
    // K ring rows and the row read for padding rows (u8, 16 channels per column), then the
    // output positions waiting to be transposed back (at most 15 carried over plus one row).
    std::vector<uint8_t> ring_store(static_cast<size_t>((K + 1) * row_bytes + 64));
    uint8_t* const ring = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(ring_store.data()) + 63) & ~uintptr_t{63});
    const uint8_t* const pad_row = ring + K * row_bytes;
    std::vector<float> obuf_store(static_cast<size_t>((OW + 16) * 16 + 16));
    float* const obuf = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(obuf_store.data()) + 63) & ~uintptr_t{63});
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t item = b; item < e; ++item) {
      const int64_t ni = item / (groups * bands), c0 = (item / bands % groups) * 16;
      const int64_t oh0 = item % bands * band_rows, oh1 = std::min(OH, oh0 + band_rows);
      if (oh0 >= oh1) continue;
      const int64_t nc = std::min<int64_t>(16, C - c0);
      const uint8_t* const xg = x + (ni * C + c0) * H * W;
      std::byte* const yg = y + static_cast<size_t>((ni * C + c0) * plane) * out_size;
      const __mmask16 cm = first_lanes(nc);
      // Weights: quad qd of kernel row kh holds taps 4qd..4qd+3 of that row (0 past the row);
      // the sums start at -x_zero * sum(w) per channel; padding reads x_zero, which then adds nothing.
      __m512i wq[K][NQ];
      const int8_t* const taps = q.taps + (c0 / 16) * K * NQ * 64;
      for (int kh = 0; kh < K; ++kh)
        for (int qd = 0; qd < NQ; ++qd) wq[kh][qd] = _mm512_loadu_si512(taps + (kh * NQ + qd) * 64);
      const __m512i neg_corr = _mm512_loadu_si512(q.neg_corr + c0);
      alignas(16) uint8_t zb[16] = {};
      for (int64_t c = 0; c < nc; ++c) zb[c] = static_cast<uint8_t>(q.x_zero[c0 + c]);
      {  // padding columns of the ring rows and the whole padding row: x_zero
        const __m128i zv = _mm_load_si128(reinterpret_cast<const __m128i*>(zb));
        for (int r = 0; r <= K; ++r) {
          uint8_t* row = ring + r * row_bytes;
          for (int64_t c = 0; c < WS; ++c)
            if (r == K || c < pl || c >= pl + W) _mm_store_si128(reinterpret_cast<__m128i*>(row + c * 16), zv);
        }
      }
      Lanes l;
      l.scale = _mm512_maskz_loadu_ps(cm, q.scale + c0);
      l.bias = q.bias ? _mm512_maskz_loadu_ps(cm, q.bias + c0) : _mm512_setzero_ps();
      l.inv = _mm512_set1_ps(1.f);
      l.yz = zero;
      if (q.quant_out) {
        l.inv = _mm512_mask_loadu_ps(l.inv, cm, q.y_inv + c0);
        alignas(64) int32_t yz[16] = {};
        for (int64_t c = 0; c < nc; ++c) yz[c] = static_cast<int32_t>(q.y_zero[c0 + c]);
        l.yz = _mm512_load_si512(yz);
      }
      // Input row h of the 16 planes into ring slot h % K, column c at (pl + c) * 16.
      auto load_row = [&](int64_t h) {
        uint8_t* dst = ring + (h % K) * row_bytes + pl * 16;
        const uint8_t* src = xg + h * W;
        transpose_channel_rows(
            W, nc,
            [&](int i, int64_t j0, __mmask16 m) {
              return _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, src + i * H * W + j0));
            },
            [&](int64_t c, __m512i v) {
              _mm_store_si128(reinterpret_cast<__m128i*>(dst + c * 16), _mm512_cvtepi32_epi8(v));
            });
      };
      // Positions [q0 * 16, q0 * 16 + cnt) of obuf to flat positions at + q0 * 16 of the planes.
      auto store_chunk = [&](int64_t q0, int64_t cnt, int64_t at) {
        __m512i r[16];
        finish(obuf + q0 * 256, cnt, q, l, r);
        const size_t off = static_cast<size_t>(at + q0 * 16);
        if (!q.quant_out) {
          store_channel_rows_f32(reinterpret_cast<float*>(yg) + off, plane, nc, cnt, r);
          return;
        }
        const __mmask16 m = first_lanes(cnt);
        __m128i b[16];  // channel i's cnt bytes
        if (q.out_u8)
          for (int64_t i = 0; i < nc; ++i) b[i] = _mm512_cvtusepi32_epi8(r[i]);
        else
          for (int64_t i = 0; i < nc; ++i) b[i] = _mm512_cvtsepi32_epi8(r[i]);
        uint8_t* d = reinterpret_cast<uint8_t*>(yg) + off;
        if (cnt == 16)
          for (int64_t i = 0; i < nc; ++i, d += plane) _mm_storeu_si128(reinterpret_cast<__m128i*>(d), b[i]);
        else
          for (int64_t i = 0; i < nc; ++i, d += plane) _mm_mask_storeu_epi8(d, m, b[i]);
      };
      depthwise_c16_rows<K, S, JB>(
          H, oh0, oh1, OW, pt, ring, row_bytes, pad_row, obuf, load_row,
          [&]<int N>(const uint8_t* const (&rows)[K], int64_t ow, float* out) {
            block<K, S, N>(rows, wq, neg_corr, l, ow, out);
          },
          store_chunk);
    }
  });
}

}  // namespace

bool qdq_depthwise_c16(const KernelContext& ctx, const ConvProblem& p, const QdqDepthwise& q,
                       const uint8_t* x, std::byte* y) {
  return int8_simd_enabled() && q.taps && q.neg_corr && p.g.k[1] == q.taps_k && p.g.k[2] == q.taps_k &&
         depthwise_c16_dispatch(p, [&]<int K, int S>() { run<K, S>(ctx, p, q, x, y); });
}
#else
bool qdq_depthwise_c16(const KernelContext&, const ConvProblem&, const QdqDepthwise&, const uint8_t*,
                       std::byte*) {
  return false;
}
#endif

std::vector<int8_t> qdq_depthwise_c16_taps(const float* w, int64_t C, int k) {
  const int64_t nq = (k + 3) / 4, groups = (C + 15) / 16;
  std::vector<int8_t> t(static_cast<size_t>(groups * k * nq * 64), 0);
  for (int64_t c = 0; c < C; ++c)
    for (int kh = 0; kh < k; ++kh)
      for (int kw = 0; kw < k; ++kw)
        t[static_cast<size_t>((((c / 16) * k + kh) * nq + kw / 4) * 64 + (c % 16) * 4 + kw % 4)] =
            static_cast<int8_t>(w[(c * k + kh) * k + kw]);
  return t;
}

std::vector<int32_t> qdq_depthwise_c16_neg_corr(const float* w, const float* x_zero, int64_t C, int k) {
  std::vector<int32_t> n(static_cast<size_t>((C + 15) / 16 * 16), 0);
  for (int64_t c = 0; c < C; ++c) {
    int32_t sum = 0;
    for (int i = 0; i < k * k; ++i) sum += static_cast<int32_t>(w[c * k * k + i]);
    n[static_cast<size_t>(c)] = -sum * static_cast<int32_t>(x_zero[c]);
  }
  return n;
}

}  // namespace mcc::backends::cpu
