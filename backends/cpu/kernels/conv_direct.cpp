// Direct f32 conv (no im2col) for 1-D/2-D convs with horizontal stride 1, on AVX-512: part of
// Conv (conv.cpp). The register tile is like the conv GEMM's (6 or 8 output channels x 32
// positions of one output row, 12 or 16 accumulators), but each k = (ci, kh, kw) row of the tile reads the input row
// ih = oh*sh - pad_top + kh*dh straight from x at columns ow - pad_left + kw*dw, with masked
// loads giving the padding zeros. The per-tile table of (offset, masks) for every k is built once
// and shared by all output-channel tiles. Each output is summed over k in the same order, with the
// same zero terms, as im2col + conv_gemm_f32, so both paths give identical values. The bias and
// the epilogue activation are applied in registers.
// Not used (returns false) on CPUs without AVX-512 (cpu_isa.h), for 3-D convs or a horizontal
// stride other than 1.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/cpu_isa.h"

#if MCC_X86
#include "backends/cpu/kernels/conv_act_avx512.h"
#endif

namespace mcc::backends::cpu {

#if MCC_X86
MCC_AVX512_BEGIN
namespace {

struct Tap {
  int64_t off;       // element offset of lane 0 from the image-group base (may be out of range)
  __mmask16 m0, m1;  // lanes read inside the input (others load 0)
};

using Finish = avx512::TileFinish;

template <int MR>
__attribute__((noinline)) void tile(int64_t K, const float* W, int64_t ldw, const float* X,
                                    const Tap* taps, float* Y, int64_t ldy, __mmask16 s0,
                                    __mmask16 s1, const Finish& f) {
  __m512 a0[MR], a1[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    a0[i] = _mm512_setzero_ps();
    a1[i] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < K; ++k) {
    const Tap t = taps[k];
    const float* xr = X + t.off;
    const __m512 x0 = _mm512_maskz_loadu_ps(t.m0, xr);
    const __m512 x1 = _mm512_maskz_loadu_ps(t.m1, xr + 16);
    avx512::fma_tile_step<MR>(W, ldw, k, x0, x1, a0, a1);
  }
  avx512::finish_tile<MR>(a0, a1, f, Y, ldy, s0, s1);
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, const Tap*, float*, int64_t,
                        __mmask16, __mmask16, const Finish&);
constexpr TileFn kTiles[9] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>,
                              tile<5>, tile<6>, tile<7>, tile<8>};

// Lanes j in [lo, hi) of a 32-lane tile as two 16-lane masks.
inline void lane_masks(int64_t lo, int64_t hi, __mmask16& m0, __mmask16& m1) {
  uint32_t bits = 0;
  if (hi > lo) {
    const uint64_t upto = hi >= 32 ? 0xFFFFFFFFull : (uint64_t{1} << hi) - 1;
    const uint64_t below = lo <= 0 ? 0 : (uint64_t{1} << lo) - 1;
    bits = static_cast<uint32_t>(upto & ~below);
  }
  m0 = static_cast<__mmask16>(bits & 0xFFFF);
  m1 = static_cast<__mmask16>(bits >> 16);
}

bool conv_direct_avx512(const WindowGeom& g, int64_t cg, const float* xg, int64_t p0, int64_t cnt,
                        int64_t M, const float* W, int64_t ldw, float* Y, int64_t ldy,
                        const float* bias, const Epilogue* ep) {
  if (g.in[0] != 1 || g.k[0] != 1 || g.out[0] != 1 || g.stride[2] != 1) return false;
  const int64_t H = g.in[1], Wd = g.in[2], OW = g.out[2], KH = g.k[1], KW = g.k[2];
  const int64_t plane = H * Wd, K = cg * KH * KW;
  const avx512::ActVec act(ep ? *ep : Epilogue{});
  Finish f;
  f.act = ep && !ep->trivial() ? &act : nullptr;
  std::vector<Tap> taps(static_cast<size_t>(K));
  // Rows per register tile: 8 (16 accumulators) when that splits M evenly, else 6.
  const int64_t mstep = M % 8 == 0 ? 8 : 6;
  int64_t p = p0;
  const int64_t pend = p0 + cnt;
  while (p < pend) {
    const int64_t oh = p / OW, ow_a = p % OW, ow_b = std::min(OW, ow_a + (pend - p));
    for (int64_t ow0 = ow_a; ow0 < ow_b; ow0 += 32) {
      const int64_t n = std::min<int64_t>(32, ow_b - ow0);
      size_t t = 0;
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * g.stride[1] - g.pad_b[1] + kh * g.dil[1];
          const bool row_ok = ih >= 0 && ih < H;
          for (int64_t kw = 0; kw < KW; ++kw, ++t) {
            const int64_t iw0 = ow0 - g.pad_b[2] + kw * g.dil[2];
            Tap& tp = taps[t];
            tp.off = ci * plane + (row_ok ? ih : 0) * Wd + iw0;
            if (row_ok)
              lane_masks(std::max<int64_t>(0, -iw0), std::min(n, Wd - iw0), tp.m0, tp.m1);
            else
              tp.m0 = tp.m1 = 0;
          }
        }
      __mmask16 s0, s1;
      lane_masks(0, n, s0, s1);
      float* yt = Y + (p - p0) + (ow0 - ow_a);
      for (int64_t m = 0; m < M; m += mstep) {
        const int64_t mr = std::min<int64_t>(mstep, M - m);
        Finish fm = f;
        fm.bias = bias ? bias + m : nullptr;
        kTiles[mr](K, W + m * ldw, ldw, xg, taps.data(), yt + m * ldy, ldy, s0, s1, fm);
      }
    }
    p += ow_b - ow_a;
  }
  return true;
}

}  // namespace
MCC_AVX512_END
#endif

bool conv_direct_f32(const WindowGeom& g, int64_t cg, const float* xg, int64_t p0, int64_t cnt,
                     int64_t M, const float* W, int64_t ldw, float* Y, int64_t ldy,
                     const float* bias, const Epilogue* ep) {
#if MCC_X86
  if (cpu_avx512()) return conv_direct_avx512(g, cg, xg, p0, cnt, M, W, ldw, Y, ldy, bias, ep);
#endif
  (void)g, (void)cg, (void)xg, (void)p0, (void)cnt, (void)M, (void)W, (void)ldw, (void)Y;
  (void)ldy, (void)bias, (void)ep;
  return false;
}

}  // namespace mcc::backends::cpu
