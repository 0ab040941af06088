// f32 one-group conv GEMM with the output channels in the vector lanes: Y[M, N] = W[M, K] * X[K, N]
// from W^T in 32-channel chunks (channel_lanes_weights), packed once when the kernel is created
// (conv_fusion.cpp, conv.cpp); X is the input itself for a pointwise conv (1x1, stride 1, no
// padding), else its im2col. conv_run takes it where channel_lanes_pay (conv_util.h): output
// maps whose position count fills conv_gemm_f32's 32-position tiles poorly (7x7: 49 of 64
// lanes, 13x13: 169 of 192, an STFT's 97 frames: 97 of 128), where every lane here does useful
// work; M need not be a multiple of 16 (the last chunk's weights are zero-padded, its extra rows
// not stored).
// Register tiles of R <= 12 positions x 32 channels (24 accumulators): each k step loads 32
// weights and broadcasts R inputs. K is walked in blocks of kKBlock so a block of a chunk's
// weights (16 KiB) stays in L1 while every position tile uses it, whatever the cache sizes; a
// tile's sums leave the registers between blocks as floats and come back unchanged. Each output
// is summed over k in order from zero, then + bias, then the activation, the same operations as
// conv_gemm_f32, so the same values bit for bit; the tile is then transposed in registers
// (16x16) and stored as rows of R positions.
// Does not apply (returns false): CPUs without AVX-512 (cpu_isa.h).
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/cpu_isa.h"
#if MCC_X86
#include "backends/cpu/kernels/conv_act_avx512.h"
#include "backends/cpu/kernels/transpose_avx512.h"
#endif

namespace mcc::backends::cpu {

namespace {
// Packed width of the W^T chunk of channels [m0, ...): 32, or the channels left rounded up to 16.
int64_t chunk_width(int64_t M, int64_t m0) { return std::min<int64_t>(32, (M - m0 + 15) / 16 * 16); }
}  // namespace

#if MCC_X86
MCC_AVX512_BEGIN
namespace {

constexpr int kMaxR = 12;      // positions per register tile
constexpr int64_t kKBlock = 128;  // k values per pass over a chunk's position tiles

// Channels [0, 16 * MV) x positions [0, R) of Y (row stride N) over k in [k0, k1), from the
// tile's weight chunk Wt [K][ldw] and X at its first position (row stride ldx). The running sums
// start at zero when k0 == 0, else from `part` ([R][16 * MV]); when k1 < K they go back to
// `part`, else they are finished (+ bias, activation) and the first `rows` channels stored to Y.
template <int MV, int R>
__attribute__((noinline)) void tile(int64_t k0, int64_t k1, int64_t K, const float* Wt, int64_t ldw,
                                    const float* X, int64_t ldx, int64_t N, float* Y, int64_t rows, float* part,
                                    const float* bias, const avx512::ActVec* act) {
  __m512 a[R][MV];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int h = 0; h < MV; ++h)
      a[r][h] = k0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(part + (r * MV + h) * 16);
  for (int64_t k = k0; k < k1; ++k) {
    const float* wr = Wt + k * ldw;
    const float* xr = X + k * ldx;
    __m512 w[MV];
#pragma GCC unroll 2
    for (int h = 0; h < MV; ++h) w[h] = _mm512_loadu_ps(wr + 16 * h);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 xb = _mm512_set1_ps(xr[r]);
#pragma GCC unroll 2
      for (int h = 0; h < MV; ++h) a[r][h] = _mm512_fmadd_ps(xb, w[h], a[r][h]);
    }
  }
  if (k1 < K) {
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int h = 0; h < MV; ++h) _mm512_storeu_ps(part + (r * MV + h) * 16, a[r][h]);
    return;
  }
  const __mmask16 m = R >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << R) - 1);
#pragma GCC unroll 2
  for (int h = 0; h < MV; ++h) {
    __m512 v[R];
    const int64_t hrows = std::min<int64_t>(16, rows - 16 * h);
    if (hrows <= 0) break;
    const __mmask16 bm = hrows >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << hrows) - 1);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(bm, bias + 16 * h) : _mm512_setzero_ps();
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) v[r] = bias ? _mm512_add_ps(a[r][h], b) : a[r][h];
    if (act) avx512::act_ps_n(v, *act);
    __m512i t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) t[i] = i < R ? _mm512_castps_si512(v[i < R ? i : 0]) : _mm512_setzero_si512();
    avx512::transpose_16x16(t);
    float* yh = Y + 16 * h * N;
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
      if (i < hrows) _mm512_mask_storeu_ps(yh + i * N, m, _mm512_castsi512_ps(t[i]));
  }
}

using TileFn = void (*)(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t,
                        int64_t, float*, int64_t, float*, const float*, const avx512::ActVec*);

template <int MV, int... Rs>
constexpr std::array<TileFn, sizeof...(Rs)> tiles(std::integer_sequence<int, Rs...>) {
  return {&tile<MV, Rs + 1>...};
}

constexpr auto kTiles32 = tiles<2>(std::make_integer_sequence<int, kMaxR>{});
constexpr auto kTiles16 = tiles<1>(std::make_integer_sequence<int, kMaxR>{});

bool conv_gemm_cl_avx512(const KernelContext& ctx, int64_t M, int64_t N, int64_t K, const float* Wt,
                         const float* X, float* Y, const float* bias, const Epilogue* ep) {
  if (M <= 0 || N <= 0) return false;
  const avx512::ActVec act_vec(ep ? *ep : Epilogue{});
  const avx512::ActVec* act = ep && !ep->trivial() ? &act_vec : nullptr;
  // Position tiles of nearly equal width (49 -> 10, 10, 10, 10, 9), channel chunks of 32 (the
  // last one 16 wide when at most 16 channels are left).
  const int64_t nt = (N + kMaxR - 1) / kMaxR, R = (N + nt - 1) / nt;
  const int64_t mchunks = (M + 31) / 32;
  // Under 16 positions each weight feeds fewer than 16 FMAs and the weight stream is the cost:
  // split across threads it ran slower than on one (Silero VAD's 6-frame STFT conv).
  const int64_t item_cost = N < 16 ? 0 : 32 * K * R;
  auto run_items = [&](int64_t b, int64_t e) {
    // The items of one chunk in this range take each K block in turn, so the block's weights
    // are read from memory once; `parts` (kept per thread, grown as needed) holds their running
    // sums between blocks.
    thread_local std::vector<float> parts;
    const size_t part_floats = K > kKBlock ? static_cast<size_t>((e - b) * kMaxR * 32) : 0;
    if (parts.size() < part_floats) parts.resize(part_floats);
    for (int64_t run = b; run < e;) {
      const int64_t mc = run / nt, run_end = std::min(e, (mc + 1) * nt);
      const int64_t m0 = mc * 32;
      const int64_t width = chunk_width(M, m0);
      const auto& fns = width == 32 ? kTiles32 : kTiles16;
      for (int64_t k0 = 0; k0 < K; k0 += kKBlock) {
        const int64_t k1 = std::min(K, k0 + kKBlock);
        for (int64_t item = run; item < run_end; ++item) {
          const int64_t n0 = (item % nt) * R, r = std::min(R, N - n0);
          float* part = part_floats == 0 ? nullptr : parts.data() + (item - b) * kMaxR * 32;
          fns[static_cast<size_t>(r - 1)](k0, k1, K, Wt + m0 * K, width, X + n0, N, N,
                                          Y + m0 * N + n0, M - m0, part,
                                          bias ? bias + m0 : nullptr, act);
        }
      }
      run = run_end;
    }
  };
  if (item_cost == 0) run_items(0, mchunks * nt);
  else ctx.parallel_for(mchunks * nt, item_cost, run_items);
  return true;
}

}  // namespace
MCC_AVX512_END
#endif

bool conv_gemm_f32_cl(const KernelContext& ctx, int64_t M, int64_t N, int64_t K, const float* Wt,
                      const float* X, float* Y, const float* bias, const Epilogue* ep) {
#if MCC_X86
  if (cpu_avx512()) return conv_gemm_cl_avx512(ctx, M, N, K, Wt, X, Y, bias, ep);
#endif
  (void)ctx, (void)M, (void)N, (void)K, (void)Wt, (void)X, (void)Y, (void)bias, (void)ep;
  return false;
}

std::vector<float> channel_lanes_weights(const float* w, const std::vector<int64_t>& wdims,
                                         int64_t group, const std::vector<int64_t>& y_dims) {
  if (!w || group != 1 || wdims.size() < 3 || wdims[0] <= 0 || !cpu_avx512()) return {};
  const int64_t M = wdims[0];
  int64_t K = wdims[1];
  for (size_t i = 2; i < wdims.size(); ++i) K *= wdims[i];
  if (K <= 0) return {};
  if (y_dims.size() == wdims.size()) {
    int64_t P = 1;
    for (size_t i = 2; i < y_dims.size(); ++i) P *= y_dims[i];
    if (!channel_lanes_pay(P, K)) return {};
  } else if (K != wdims[1] && M * K > kUnknownShapeWeights) {
    return {};
  }
  const int64_t padded = (M + 15) / 16 * 16;
  std::vector<float> t(static_cast<size_t>(padded * K), 0.f);
  // Chunks of 32 channels (the last chunk_width wide), each [K][width]: one tile's weights are one
  // contiguous stream; channels past M are zero.
  for (int64_t m0 = 0; m0 < M; m0 += 32) {
    const int64_t width = chunk_width(M, m0);
    float* chunk = t.data() + m0 * K;
    for (int64_t m = 0; m < std::min(width, M - m0); ++m)
      for (int64_t k = 0; k < K; ++k) chunk[k * width + m] = w[(m0 + m) * K + k];
  }
  return t;
}

}  // namespace mcc::backends::cpu
