// Channels-in-lanes depthwise conv of the QDQ conv fusion (AVX-512 builds): 2-D, 3x3 or 5x5,
// stride 1 or 2 in both dims, no dilation, channel multiplier 1, any pads, u8 x. As
// conv_depthwise_c16.cpp does for f32: 16 channels at a time, each u8 input row of the 16 planes
// is widened, transposed in registers and stored as (x - x_zero) f32 vectors in a zero-padded ring
// of K rows (padding is x == x_zero, so it reads 0), each output position is one vector of 16
// channels accumulating w * (x - x_zero) over the taps (exact integers in f32, so the order does
// not matter and the sums equal the per-channel kernel's), then * scale + bias, the activation
// and the quantization with per-channel parameters in the lanes; the s32 (or f32) results are
// transposed back to the channel planes 16 positions at a time over the flattened plane and
// narrowed with saturation to u8/s8.
// Does not apply (returns false): other kernel sizes or strides, dilation, channel multiplier
// > 1, builds without AVX-512, int8 SIMD switched off; qdq_conv_fusion.cpp's per-channel kernel
// runs those.
#include "backends/cpu/kernels/qdq_depthwise_c16.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/int8_gemm.h"
#if defined(__AVX512F__)
#include "backends/cpu/kernels/qdq_epilogue_avx512.h"
#include "backends/cpu/kernels/transpose_avx512.h"
#endif

namespace mcc::backends::cpu {

#if defined(__AVX512F__)
namespace {

inline __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
}

// The 16 channels' lanes of one group: scale, bias, y quantization parameters.
struct Lanes {
  __m512 scale, bias, inv;
  __m512i yz;
};

// Output positions [ow, ow + JB) of one output row into out (16 floats each): the tap sums, then
// * scale + bias. rows[kh] are the ring rows the output row reads.
template <int K, int S, int JB>
inline void block(const float* const (&rows)[K], const __m512 (&wv)[K * K], const Lanes& l,
                  int64_t ow, float* out) {
  __m512 v[JB];
#pragma GCC unroll 8
  for (int j = 0; j < JB; ++j) v[j] = _mm512_setzero_ps();
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
#pragma GCC unroll 8
  for (int j = 0; j < JB; ++j) _mm512_store_ps(out + (ow + j) * 16, _mm512_fmadd_ps(v[j], l.scale, l.bias));
}

// cnt (<= 16) positions of obuf, activated and quantized (or kept f32) in channel lanes, then
// transposed into r: r[i] holds channel i's cnt positions.
template <Epilogue::Act Act>
void finish_chunk(const float* obuf, int64_t cnt, const QdqDepthwise& q, const Lanes& l,
                  __m512i (&r)[16]) {
  const bool u8 = q.out_u8;
  for (int t = 0; t < 16; ++t) {
    if (t >= cnt) {
      r[t] = _mm512_setzero_si512();
      continue;
    }
    const __m512 v = avx512::qdq_act16<Act>(_mm512_load_ps(obuf + t * 16), q.ep);
    r[t] = q.quant_out ? avx512::qdq_quantize16(v, l.inv, l.yz, u8) : _mm512_castps_si512(v);
  }
  avx512::transpose_16x16(r);
}

void finish(const float* obuf, int64_t cnt, const QdqDepthwise& q, const Lanes& l, __m512i (&r)[16]) {
  using A = Epilogue::Act;
  switch (q.ep.act) {
    case A::None: return finish_chunk<A::None>(obuf, cnt, q, l, r);
    case A::Relu: return finish_chunk<A::Relu>(obuf, cnt, q, l, r);
    case A::Clip: return finish_chunk<A::Clip>(obuf, cnt, q, l, r);
    case A::Sigmoid: return finish_chunk<A::Sigmoid>(obuf, cnt, q, l, r);
    case A::SiLU: return finish_chunk<A::SiLU>(obuf, cnt, q, l, r);
    case A::LeakyRelu: return finish_chunk<A::LeakyRelu>(obuf, cnt, q, l, r);
    case A::HardSigmoid: return finish_chunk<A::HardSigmoid>(obuf, cnt, q, l, r);
    case A::HardSwish: return finish_chunk<A::HardSwish>(obuf, cnt, q, l, r);
  }
}

template <int K, int S>
void run(const KernelContext& ctx, const ConvProblem& p, const QdqDepthwise& q, const uint8_t* x,
         std::byte* y) {
  const WindowGeom& g = p.g;
  const int64_t C = p.c, H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t pt = g.pad_b[1], pl = g.pad_b[2];
  const int64_t WS = std::max((OW - 1) * S + K, pl + W);  // columns of one padded ring row
  const int64_t row_floats = WS * 16, groups = (C + 15) / 16, plane = OH * OW;
  const size_t out_size = q.quant_out ? 1 : sizeof(float);
  constexpr int JB = K == 3 ? 8 : 4;  // outputs per block: independent accumulation chains
  ctx.parallel_for(p.n * groups, OH * OW * K * K * 16, [&](int64_t b, int64_t e) {
    // K ring rows, the zero row read for padding rows, then the output positions waiting to be
    // transposed back (at most 15 carried over plus one output row). Padding columns are zeroed
    // here once: the row loads write only the data columns [pl, pl + W).
    std::vector<float> storage(static_cast<size_t>((K + 1) * row_floats + (OW + 16) * 16 + 16), 0.f);
    float* const ring =
        reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t{63});
    const float* const zero_row = ring + K * row_floats;
    float* const obuf = ring + (K + 1) * row_floats;
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t item = b; item < e; ++item) {
      const int64_t ni = item / groups, c0 = (item % groups) * 16;
      const int64_t nc = std::min<int64_t>(16, C - c0);
      const uint8_t* const xg = x + (ni * C + c0) * H * W;
      std::byte* const yg = y + static_cast<size_t>((ni * C + c0) * plane) * out_size;
      const __mmask16 cm = first_lanes(nc);
      __m512 wv[K * K];
      {
        alignas(64) float wt[K * K][16] = {};
        for (int64_t c = 0; c < nc; ++c)
          for (int t = 0; t < K * K; ++t) wt[t][c] = q.w[(c0 + c) * K * K + t];
        for (int t = 0; t < K * K; ++t) wv[t] = _mm512_load_ps(wt[t]);
      }
      Lanes l;
      l.scale = _mm512_maskz_loadu_ps(cm, q.scale + c0);
      l.bias = q.bias ? _mm512_maskz_loadu_ps(cm, q.bias + c0) : _mm512_setzero_ps();
      l.inv = _mm512_set1_ps(1.f);
      l.yz = zero;
      if (q.quant_out) {
        alignas(64) float inv[16];
        alignas(64) int32_t yz[16];
        for (int64_t c = 0; c < 16; ++c) {
          inv[c] = c < nc ? 1.f / q.y_scale[c0 + c] : 1.f;
          yz[c] = c < nc ? static_cast<int32_t>(q.y_zero[c0 + c]) : 0;
        }
        l.inv = _mm512_load_ps(inv);
        l.yz = _mm512_load_si512(yz);
      }
      const __m512 xz = _mm512_maskz_loadu_ps(cm, q.x_zero + c0);
      // Input row h of the 16 planes as (x - x_zero) into ring slot h % K, column c at
      // (pl + c) * 16.
      auto load_row = [&](int64_t h) {
        float* dst = ring + (h % K) * row_floats + pl * 16;
        const uint8_t* src = xg + h * W;
        for (int64_t j0 = 0; j0 < W; j0 += 16) {
          const int64_t n = std::min<int64_t>(16, W - j0);
          const __mmask16 m = first_lanes(n);
          __m512i r[16];
#pragma GCC unroll 16
          for (int i = 0; i < 16; ++i)
            r[i] = i < nc ? _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, src + i * H * W + j0)) : zero;
          avx512::transpose_16x16(r);
          for (int64_t t = 0; t < n; ++t)
            _mm512_store_ps(dst + (j0 + t) * 16, _mm512_sub_ps(_mm512_cvtepi32_ps(r[t]), xz));
        }
      };
      // Positions [q0 * 16, q0 * 16 + cnt) of obuf to flat positions at + q0 * 16 of the planes.
      auto store_chunk = [&](int64_t q0, int64_t cnt, int64_t at) {
        __m512i r[16];
        finish(obuf + q0 * 256, cnt, q, l, r);
        const __mmask16 m = first_lanes(cnt);
        const int64_t off = at + q0 * 16;
        for (int64_t i = 0; i < nc; ++i) {
          const size_t o = static_cast<size_t>(i * plane + off);
          if (!q.quant_out)
            _mm512_mask_storeu_ps(reinterpret_cast<float*>(yg) + o, m, _mm512_castsi512_ps(r[i]));
          else if (q.out_u8)
            _mm_mask_storeu_epi8(reinterpret_cast<uint8_t*>(yg) + o, m, _mm512_cvtusepi32_epi8(r[i]));
          else
            _mm_mask_storeu_epi8(reinterpret_cast<int8_t*>(yg) + o, m, _mm512_cvtsepi32_epi8(r[i]));
        }
      };
      int64_t next_h = 0;             // the next input row to load into the ring
      int64_t pending = 0, done = 0;  // positions waiting in obuf / already stored
      for (int64_t oh = 0; oh < OH; ++oh) {
        const float* rows[K];
        for (int kh = 0; kh < K; ++kh) {
          const int64_t h = oh * S - pt + kh;
          if (h < 0 || h >= H) {
            rows[kh] = zero_row;
            continue;
          }
          // Rows load in order; row h replaces h - K, which no output from here on reads.
          for (; next_h <= h; ++next_h) load_row(next_h);
          rows[kh] = ring + (h % K) * row_floats;
        }
        float* out = obuf + pending * 16;
        int64_t ow = 0;
        for (; ow + JB <= OW; ow += JB) block<K, S, JB>(rows, wv, l, ow, out);
        for (; ow < OW; ++ow) block<K, S, 1>(rows, wv, l, ow, out);
        pending += OW;
        const int64_t full = pending / 16;
        for (int64_t q0 = 0; q0 < full; ++q0) store_chunk(q0, 16, done);
        if (full > 0 && pending % 16 != 0)
          std::memmove(obuf, obuf + full * 256, static_cast<size_t>(pending % 16) * 64);
        done += full * 16;
        pending -= full * 16;
      }
      if (pending > 0) store_chunk(0, pending, done);
    }
  });
}

}  // namespace

bool qdq_depthwise_c16(const KernelContext& ctx, const ConvProblem& p, const QdqDepthwise& q,
                       const uint8_t* x, std::byte* y) {
  const WindowGeom& g = p.g;
  if (!int8_simd_enabled()) return false;
  if (g.nd != 2 || g.in[0] != 1 || g.k[0] != 1 || g.dil[1] != 1 || g.dil[2] != 1) return false;
  if (p.m != p.group || p.c != p.group || g.k[1] != g.k[2] || g.stride[1] != g.stride[2]) return false;
  const int64_t k = g.k[1], s = g.stride[1];
  if (k == 3 && s == 1) run<3, 1>(ctx, p, q, x, y);
  else if (k == 3 && s == 2) run<3, 2>(ctx, p, q, x, y);
  else if (k == 5 && s == 1) run<5, 1>(ctx, p, q, x, y);
  else if (k == 5 && s == 2) run<5, 2>(ctx, p, q, x, y);
  else return false;
  return true;
}
#else
bool qdq_depthwise_c16(const KernelContext&, const ConvProblem&, const QdqDepthwise&, const uint8_t*,
                       std::byte*) {
  return false;
}
#endif

}  // namespace mcc::backends::cpu
