// f32 GEMM for MatMul: C[M, N] = A[M, K] * B[K, N], all row-major, with the instruction set
// picked at run time (matmul_f32_isa): the kernels are compiled for AVX-512 and for AVX2+FMA
// through target attributes, whatever the build's -march, and the CPU's cpuid chooses.
// B is packed into panels of 32 columns (K x 32 contiguous, zero-padded). AVX-512: register tiles
// of 12 rows x 32 columns (24 accumulators); AVX2: 6 rows x 16 columns (12 of its 16 registers),
// two per panel. A values are broadcast straight from its rows. K is split into blocks of at most
// 512. On AVX-512 each row tile walks a panel's K blocks in turn (its running sums stay in L1; the
// panel, in L2, is re-read by every row tile, which share out prefetching the next panel); on
// AVX2 each K block of a panel meets every row tile. Each output is summed over k in order with
// one fused multiply-add per step (blocks in order, each continuing the previous partial sum in
// C), so results are deterministic, independent of the thread count and the same bits on both
// instruction sets. Without either (or MCC_CPU_ISA=eigen) matmul_f32_available() is false and
// callers keep Eigen's GEMM.
#include "backends/cpu/kernels/matmul_f32.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/cpu_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MCC_X86_KERNELS 1
#define MCC_TARGET_AVX512 __attribute__((target("avx512f")))
#define MCC_TARGET_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace mcc::backends::cpu {

namespace {
constexpr int64_t kNR = 32;   // columns per panel
constexpr int64_t kMR = 12;   // rows per register tile (AVX-512)
constexpr int64_t kMR2 = 6;   // rows per register tile (AVX2)
constexpr int64_t kKC = 512;  // largest K block

// K blocks: at most kKC each, as even as possible (the same split on every instruction set).
int64_t k_step(int64_t K) {
  const int64_t nk = (K + kKC - 1) / kKC;
  return (K + nk - 1) / nk;
}

// The running sums of a panel's rows go to a contiguous buffer (rows kNR floats apart) and are
// copied to C once per panel, when C would be re-read between K blocks (more than one), or when C
// is so large that nothing reads it from the caches afterwards (kStreamBytes: the tied LM head's
// logits). The copy then uses non-temporal stores: writing 128 bytes of each of hundreds of rows
// per panel otherwise waits on a read of every line first (the LM head of SmolLM2 at seq 256 took
// 126 ms instead of 100; ONNX Runtime 93). Same sums, same bits.
constexpr int64_t kStreamBytes = int64_t{16} << 20;

float* staging(bool needed, int64_t floats) {
  if (!needed) return nullptr;
  thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < floats) buf.resize(static_cast<size_t>(floats));
  return buf.data();
}

// Copies `rows` rows of `cols` floats from the staging buffer (row stride sld) to C.
void unstage(const float* stage, int64_t sld, int64_t rows, float* C, int64_t ldc, int64_t cols,
             bool stream) {
#if defined(MCC_X86_KERNELS)
  if (stream && cols == kNR && reinterpret_cast<uintptr_t>(C) % 16 == 0 && ldc % 4 == 0) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t q = 0; q < kNR; q += 4)
        _mm_stream_ps(C + r * ldc + q, _mm_loadu_ps(stage + r * sld + q));
    return;
  }
#endif
  (void)stream;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(C + r * ldc, stage + r * sld, sizeof(float) * static_cast<size_t>(cols));
}

#if defined(MCC_X86_KERNELS)
// One MR x 32 tile over k in [0, kc): C = (accumulate ? C : 0) + A * Bp. Kept out of line so GCC
// keeps the accumulators in registers (2 x MR of the 32 zmm registers).
// Prefetch share of one tile: `lines` cache lines from `at`, one every `every` k steps.
struct Prefetch {
  const float* at = nullptr;
  int64_t lines = 0, every = 1;
};

// With PF, the tile prefetches its share of the next panel into L2 on the way.
template <int MR, bool PF>
MCC_TARGET_AVX512 __attribute__((noinline)) void tile(int64_t kc, const float* A, int64_t lda,
                                                      const float* Bp, float* C, int64_t ldc,
                                                      __mmask16 m0, __mmask16 m1, bool accumulate,
                                                      Prefetch pf) {
  int64_t pf_next = 0, pf_done = 0;
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
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
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const __m512 a = _mm512_set1_ps(A[i * lda + k]);
      c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(C + i * ldc, m0, c0[i]);
    _mm512_mask_storeu_ps(C + i * ldc + 16, m1, c1[i]);
  }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, float*, int64_t, __mmask16,
                        __mmask16, bool, Prefetch);
template <bool PF>
constexpr TileFn kTilesPf[kMR + 1] = {
    nullptr,     tile<1, PF>, tile<2, PF>, tile<3, PF>,  tile<4, PF>,  tile<5, PF>, tile<6, PF>,
    tile<7, PF>, tile<8, PF>, tile<9, PF>, tile<10, PF>, tile<11, PF>, tile<12, PF>};

// Rows [r0, r1) x panels [p0, p1) of C. For each panel, each row tile walks the K blocks, so its
// running sums stay in L1 between blocks; the panel's packed B (K x 32 floats) is re-read from L2
// by every row tile, and the row tiles share out prefetching the next panel into L2 (in a model,
// each MatMul's weights come from memory). Streamed products are staged per row tile and leave
// with non-temporal stores.
MCC_TARGET_AVX512 void run_block_avx512(int64_t r0, int64_t r1, int64_t p0, int64_t p1,
                                        const float* A, int64_t lda, const PackedB& B, float* C,
                                        int64_t ldc, bool stream) {
  const int64_t K = B.K, N = B.N;
  const int64_t kstep = k_step(K);
  const int64_t kblocks = (K + kstep - 1) / kstep, calls = (r1 - r0 + kMR - 1) / kMR * kblocks;
  float* stage = staging(stream, kMR * kNR);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j = p * kNR, left = N - j;
    const __mmask16 m0 = stage || left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __mmask16 m1 = stage || left >= 32 ? __mmask16(0xFFFF)
                         : left <= 16        ? __mmask16(0)
                                             : __mmask16((1u << (left - 16)) - 1);
    const float* panel = B.data.data() + p * K * kNR;
    // The next panel of this block (16 floats a line), shared out over this panel's tile calls.
    const int64_t lines = p + 1 < p1 ? K * kNR / 16 : 0, per_call = (lines + calls - 1) / calls;
    int64_t call = 0;
    for (int64_t r = r0; r < r1; r += kMR) {
      const int64_t mr = std::min(kMR, r1 - r);
      float* c = stage ? stage : C + r * ldc + j;
      for (int64_t k0 = 0; k0 < K; k0 += kstep, ++call) {
        const int64_t kc = std::min(kstep, K - k0);
        Prefetch pf;
        if (lines > call * per_call) {
          pf.at = panel + K * kNR + call * per_call * 16;
          pf.lines = std::min(per_call, lines - call * per_call);
          pf.every = std::max<int64_t>(1, kc / pf.lines);
        }
        const TileFn run_tile = pf.lines > 0 ? kTilesPf<true>[mr] : kTilesPf<false>[mr];
        run_tile(kc, A + r * lda + k0, lda, panel + k0 * kNR, c, stage ? kNR : ldc, m0, m1, k0 > 0,
                 pf);
      }
      if (stage) unstage(stage, kNR, mr, C + r * ldc + j, ldc, std::min(kNR, left), stream);
    }
  }
  if (stream) _mm_sfence();  // the streamed rows are visible before the caller's threads join
}

// One MR x 16 tile (half a panel) over k in [0, kc): C = (accumulate ? C : 0) + A * Bp, with
// Bp's rows kNR floats apart; `cols` (1..16) columns of C are read and written.
template <int MR>
MCC_TARGET_AVX2 __attribute__((noinline)) void tile_avx2(int64_t kc, const float* A, int64_t lda,
                                                         const float* Bp, float* C, int64_t ldc,
                                                         int cols, bool accumulate) {
  alignas(32) static const int kLanes[24] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0,
                                             0,  0,  0,  0,  0,  0,  0,  0,  0, 0, 0, 0};
  // Lane i of m0 is on when i < cols, of m1 when 8 + i < cols.
  const __m256i m0 =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - std::min(cols, 8)));
  const __m256i m1 =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - std::clamp(cols - 8, 0, 8)));
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    if (accumulate) {
      c0[i] = _mm256_maskload_ps(C + i * ldc, m0);
      c1[i] = _mm256_maskload_ps(C + i * ldc + 8, m1);
    } else {
      c0[i] = _mm256_setzero_ps();
      c1[i] = _mm256_setzero_ps();
    }
  }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(Bp + k * kNR);
    const __m256 b1 = _mm256_loadu_ps(Bp + k * kNR + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 a = _mm256_broadcast_ss(A + i * lda + k);
      c0[i] = _mm256_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(a, b1, c1[i]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    _mm256_maskstore_ps(C + i * ldc, m0, c0[i]);
    _mm256_maskstore_ps(C + i * ldc + 8, m1, c1[i]);
  }
}

using Tile2Fn = void (*)(int64_t, const float*, int64_t, const float*, float*, int64_t, int, bool);
constexpr Tile2Fn kTiles2[kMR2 + 1] = {nullptr,      tile_avx2<1>, tile_avx2<2>, tile_avx2<3>,
                                       tile_avx2<4>, tile_avx2<5>, tile_avx2<6>};

// Rows [r0, r1) x panels [p0, p1) of C, each panel as two halves of 16 columns.
void run_block_avx2(int64_t r0, int64_t r1, int64_t p0, int64_t p1, const float* A, int64_t lda,
                    const PackedB& B, float* C, int64_t ldc, bool stream) {
  const int64_t K = B.K, N = B.N;
  const int64_t kstep = k_step(K);
  float* stage = staging(K > kstep || stream, (r1 - r0) * kNR);
  for (int64_t p = p0; p < p1; ++p) {
    const float* panel = B.data.data() + p * K * kNR;
    for (int64_t k0 = 0; k0 < K; k0 += kstep) {
      const int64_t kc = std::min(kstep, K - k0);
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t j = p * kNR + h * 16, cols = stage ? 16 : std::min<int64_t>(16, N - j);
        if (cols <= 0) break;
        for (int64_t r = r0; r < r1; r += kMR2) {
          const int64_t mr = std::min(kMR2, r1 - r);
          float* c = stage ? stage + (r - r0) * kNR + h * 16 : C + r * ldc + j;
          kTiles2[mr](kc, A + r * lda + k0, lda, panel + k0 * kNR + h * 16, c, stage ? kNR : ldc,
                      static_cast<int>(cols), k0 > 0);
        }
      }
    }
    if (stage)
      unstage(stage, kNR, r1 - r0, C + r0 * ldc + p * kNR, ldc, std::min(kNR, N - p * kNR), stream);
  }
  if (stream) _mm_sfence();
}
#endif

bool cpu_has(MatmulIsa isa) {
#if defined(MCC_X86_KERNELS)
  switch (isa) {
    case MatmulIsa::Avx512:
      return __builtin_cpu_supports("avx512f");
    case MatmulIsa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case MatmulIsa::Eigen:
      return true;
  }
#endif
  return isa == MatmulIsa::Eigen;
}

// The best set the CPU has, capped by MCC_CPU_ISA (cpu_isa.h).
MatmulIsa detect_isa() {
  if (cpu_avx512()) return MatmulIsa::Avx512;
  if (cpu_avx2()) return MatmulIsa::Avx2;
  return MatmulIsa::Eigen;
}

std::atomic<int>& isa_slot() {
  static std::atomic<int> slot{static_cast<int>(detect_isa())};
  return slot;
}
}  // namespace

MatmulIsa matmul_f32_isa() {
  return static_cast<MatmulIsa>(isa_slot().load(std::memory_order_relaxed));
}

const char* matmul_isa_name(MatmulIsa isa) {
  switch (isa) {
    case MatmulIsa::Avx512:
      return "avx512";
    case MatmulIsa::Avx2:
      return "avx2";
    case MatmulIsa::Eigen:
      return "eigen";
  }
  return "eigen";
}

bool matmul_f32_use_isa(MatmulIsa isa) {
  if (!cpu_has(isa)) return false;
  isa_slot().store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

bool matmul_f32_available() { return matmul_f32_isa() != MatmulIsa::Eigen; }

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

// Whether threads take bands of row tiles rather than column panels: when there are at least two
// tiles a thread and the tiles split as evenly as the panels. Each thread then reads its own rows
// of A (written by the same thread's band of the op before) and writes its own rows of C; every
// thread reads all of B. Measured on SmolLM2-135M's projections (256 rows) at 2 threads: 5-7 %
// faster than panels.
static bool split_rows(int64_t tiles, int64_t panels, int threads) {
  const auto spread = [threads](int64_t n) {
    return (n + threads - 1) / threads * threads * 1.0 / n;
  };
  return tiles >= 2 * threads && spread(tiles) <= spread(panels);
}

void matmul_packed_f32(const KernelContext& ctx, int64_t M, const float* A, int64_t lda,
                       const PackedB& B, float* C, int64_t ldc, bool parallel) {
#if defined(MCC_X86_KERNELS)
  const MatmulIsa isa = matmul_f32_isa();
  if (M <= 0 || B.N <= 0 || isa == MatmulIsa::Eigen) return;
  if (B.K == 0) {
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + B.N, 0.f);
    return;
  }
  auto* run_block = isa == MatmulIsa::Avx512 ? run_block_avx512 : run_block_avx2;
  const int64_t mr = isa == MatmulIsa::Avx512 ? kMR : kMR2;
  const int64_t panels = (B.N + kNR - 1) / kNR, tiles = (M + mr - 1) / mr;
  const int threads = parallel ? std::max(1, ctx.num_threads()) : 1;
  // Work in the pool's units counted as 8 flops each (the FMA units do 32 a cycle): a chunk then
  // carries about a microsecond of products before the work is split (a GEMV of a 64 x 384 Linear
  // in a Loop body ran slower on 2 threads than on 1 when counted per flop).
  const int64_t row_panel = kNR * B.K * 2 / 8;
  const bool stream = M * ldc * static_cast<int64_t>(sizeof(float)) >= kStreamBytes;
  if (threads == 1) {
    run_block(0, M, 0, panels, A, lda, B, C, ldc, stream);
  } else if (!split_rows(tiles, panels, threads) && (panels >= threads || panels >= tiles)) {
    ctx.parallel_for(panels, M * row_panel, [&](int64_t b, int64_t e) {
      run_block(0, M, b, e, A, lda, B, C, ldc, stream);
    });
  } else {
    ctx.parallel_for(tiles, mr * panels * row_panel, [&](int64_t b, int64_t e) {
      run_block(b * mr, std::min(M, e * mr), 0, panels, A, lda, B, C, ldc, stream);
    });
  }
#else
  (void)ctx, (void)M, (void)A, (void)lda, (void)B, (void)C, (void)ldc, (void)parallel;
#endif
}

}  // namespace mcc::backends::cpu
