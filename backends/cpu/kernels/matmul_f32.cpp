// f32 GEMM for MatMul: C[M, N] = A[M, K] * B[K, N], all row-major, on AVX-512.
// B is packed into panels of 32 columns (K x 32 contiguous, zero-padded); register tiles of
// 8 rows x 32 columns (16 accumulators), A values broadcast straight from its rows. K is split
// into blocks of at most 512 (a 64 KB panel block, in L2, re-read by every row tile of A; packed
// B is read front to back, so the row tiles share out prefetching the next block into L2). Each output is summed over k in order (blocks in order, each block continuing the previous
// partial sum in C), so results are deterministic and independent of the thread count.
// Without AVX-512 the functions are not used (matmul_f32_available() is false).
#include "backends/cpu/kernels/matmul_f32.h"

#include <algorithm>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace mcc::backends::cpu {

namespace {
constexpr int64_t kNR = 32;    // columns per panel
constexpr int64_t kMR = 8;     // rows per register tile
constexpr int64_t kKC = 512;   // largest K block

#if defined(__AVX512F__)
// One MR x 32 tile over k in [0, kc): C = (accumulate ? C : 0) + A * Bp. Kept out of line so GCC
// keeps the accumulators in registers.
// Prefetch share of one tile: `lines` cache lines from `at`, one every `every` k steps.
struct Prefetch {
  const float* at = nullptr;
  int64_t lines = 0, every = 1;
};

// With PF, the tile prefetches its share of the next packed block into L2 on the way.
template <int MR, bool PF>
__attribute__((noinline)) void tile(int64_t kc, const float* A, int64_t lda, const float* Bp, float* C,
                                    int64_t ldc, __mmask16 m0, __mmask16 m1, bool accumulate,
                                    Prefetch pf) {
  int64_t pf_next = 0, pf_done = 0;
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    if (accumulate) {
      c0[i] = _mm512_maskz_loadu_ps(m0, C + i * ldc);
      c1[i] = _mm512_maskz_loadu_ps(m1, C + i * ldc + 16);
    } else {
      c0[i] = _mm512_setzero_ps();
      c1[i] = _mm512_setzero_ps();
    }
  }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(Bp + k * kNR);
    const __m512 b1 = _mm512_loadu_ps(Bp + k * kNR + 16);
    if constexpr (PF) {
      if (k == pf_next && pf_done < pf.lines) {
        _mm_prefetch(reinterpret_cast<const char*>(pf.at + pf_done * 16), _MM_HINT_T1);
        ++pf_done;
        pf_next += pf.every;
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 a = _mm512_set1_ps(A[i * lda + k]);
      c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(C + i * ldc, m0, c0[i]);
    _mm512_mask_storeu_ps(C + i * ldc + 16, m1, c1[i]);
  }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, float*, int64_t, __mmask16,
                        __mmask16, bool, Prefetch);
constexpr TileFn kTiles[2][kMR + 1] = {
    {nullptr, tile<1, false>, tile<2, false>, tile<3, false>, tile<4, false>, tile<5, false>,
     tile<6, false>, tile<7, false>, tile<8, false>},
    {nullptr, tile<1, true>, tile<2, true>, tile<3, true>, tile<4, true>, tile<5, true>,
     tile<6, true>, tile<7, true>, tile<8, true>}};

// Rows [r0, r1) x panels [p0, p1) of C.
void run_block(int64_t r0, int64_t r1, int64_t p0, int64_t p1, const float* A, int64_t lda,
               const PackedB& B, float* C, int64_t ldc) {
  const int64_t K = B.K, N = B.N;
  const int64_t nk = (K + kKC - 1) / kKC, kstep = (K + nk - 1) / nk;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j = p * kNR, left = N - j;
    const __mmask16 m0 = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __mmask16 m1 = left >= 32   ? __mmask16(0xFFFF)
                         : left <= 16 ? __mmask16(0)
                                      : __mmask16((1u << (left - 16)) - 1);
    const float* panel = B.data.data() + p * K * kNR;
    for (int64_t k0 = 0; k0 < K; k0 += kstep) {
      const int64_t kc = std::min(kstep, K - k0);
      // Packed B is read front to back: the row tiles share out the prefetch of the next block
      // (of this panel or the next one), spread over their k steps.
      const int64_t next = (p * K + k0 + kc) * kNR;
      const int64_t lines = next + kc * kNR <= static_cast<int64_t>(B.data.size()) ? kc * kNR / 16 : 0;
      const int64_t ntiles = (r1 - r0 + kMR - 1) / kMR, per_tile = (lines + ntiles - 1) / ntiles;
      int64_t t = 0;
      for (int64_t r = r0; r < r1; r += kMR, ++t) {
        const int64_t mr = std::min(kMR, r1 - r);
        Prefetch pf;
        if (lines > t * per_tile) {
          pf.at = B.data.data() + next + t * per_tile * 16;
          pf.lines = std::min(per_tile, lines - t * per_tile);
          pf.every = std::max<int64_t>(1, kc / pf.lines);
        }
        kTiles[pf.lines > 0][mr](kc, A + r * lda + k0, lda, panel + k0 * kNR, C + r * ldc + j, ldc, m0, m1,
                                 k0 > 0, pf);
      }
    }
  }
}
#endif
}  // namespace

bool matmul_f32_available() {
#if defined(__AVX512F__)
  return true;
#else
  return false;
#endif
}

void pack_b_f32(const float* B, int64_t ldb, int64_t K, int64_t N, PackedB& out) {
  const int64_t panels = (N + kNR - 1) / kNR;
  out.K = K;
  out.N = N;
  out.data.assign(static_cast<size_t>(panels * K * kNR), 0.f);
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t j = p * kNR, w = std::min(kNR, N - j);
    float* dst = out.data.data() + p * K * kNR;
    for (int64_t k = 0; k < K; ++k) std::memcpy(dst + k * kNR, B + k * ldb + j, sizeof(float) * w);
  }
}

void matmul_packed_f32(const KernelContext& ctx, int64_t M, const float* A, int64_t lda,
                       const PackedB& B, float* C, int64_t ldc, bool parallel) {
#if defined(__AVX512F__)
  if (M <= 0 || B.N <= 0) return;
  if (B.K == 0) {
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + B.N, 0.f);
    return;
  }
  const int64_t panels = (B.N + kNR - 1) / kNR, tiles = (M + kMR - 1) / kMR;
  const int threads = parallel ? std::max(1, ctx.num_threads()) : 1;
  const int64_t cost = kMR * kNR * B.K * 2;
  if (threads == 1) {
    run_block(0, M, 0, panels, A, lda, B, C, ldc);
  } else if (panels >= threads || panels >= tiles) {
    ctx.parallel_for(panels, cost * tiles, [&](int64_t b, int64_t e) {
      run_block(0, M, b, e, A, lda, B, C, ldc);
    });
  } else {
    ctx.parallel_for(tiles, cost * panels, [&](int64_t b, int64_t e) {
      run_block(b * kMR, std::min(M, e * kMR), 0, panels, A, lda, B, C, ldc);
    });
  }
#else
  (void)ctx, (void)M, (void)A, (void)lda, (void)B, (void)C, (void)ldc, (void)parallel;
#endif
}

}  // namespace mcc::backends::cpu
