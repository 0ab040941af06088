// f32 GEMM for the conv output blocks: Y[M, N] = W[M, K] * X[K, N], all row-major.
// AVX-512: register tiles of 8 (when that splits M evenly) or 6 output channels x 32 positions
// (16 or 12 accumulators). AVX2+FMA (CPUs without AVX-512): 6 output channels x 16 positions (12
// of the 16 ymm registers). W values are broadcast straight from the weight rows and X rows are
// read contiguously, so nothing is packed. Each output is summed over k in order with one FMA a
// step (deterministic, independent of threads and blocking; the AVX2 sums equal the AVX-512 ones).
// The bias and the epilogue activation (conv_act_avx512.h, conv_act_avx2.h) are applied in
// registers before the store (the output block is written once). Compiled for both instruction
// sets in every build; where the CPU has neither (cpu_isa.h) conv_gemm_f32 returns false and the
// caller uses Eigen.
#include <algorithm>
#include <cstdint>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/cpu_isa.h"

#if MCC_X86
#include "backends/cpu/kernels/conv_act_avx2.h"
#include "backends/cpu/kernels/conv_act_avx512.h"
#endif

namespace mcc::backends::cpu {

#if MCC_X86
namespace {
// Calls f.template operator()<R>() for the R = rest (1..5) rows a tile loop leaves over.
template <class F>
void remainder_rows(int64_t rest, F&& f) {
  switch (rest) {
    case 5: f.template operator()<5>(); break;
    case 4: f.template operator()<4>(); break;
    case 3: f.template operator()<3>(); break;
    case 2: f.template operator()<2>(); break;
    case 1: f.template operator()<1>(); break;
    default: break;
  }
}
}  // namespace

MCC_AVX512_BEGIN
namespace {

// Output finish in registers: + bias[row], then the activation.
using Finish = avx512::TileFinish;


// Kept out of line: inlined into the row loop, GCC spills the accumulators.
template <int MR, bool Full>
__attribute__((noinline)) void tile(int64_t K, const float* W, int64_t ldw, const float* X, int64_t ldx, float* Y,
                 int64_t ldy, __mmask16 m0, __mmask16 m1, const Finish& f) {
  __m512 a0[MR], a1[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    a0[i] = _mm512_setzero_ps();
    a1[i] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < K; ++k) {
    const float* xr = X + k * ldx;
    const __m512 x0 = Full ? _mm512_loadu_ps(xr) : _mm512_maskz_loadu_ps(m0, xr);
    const __m512 x1 = Full ? _mm512_loadu_ps(xr + 16) : _mm512_maskz_loadu_ps(m1, xr + 16);
    avx512::fma_tile_step<MR>(W, ldw, k, x0, x1, a0, a1);
  }
  avx512::finish_tile<MR>(a0, a1, f, Y, ldy, m0, m1);
}

template <int MR>
void rows(int64_t N, int64_t K, const float* W, int64_t ldw, const float* X, int64_t ldx, float* Y,
          int64_t ldy, const Finish& f) {
  for (int64_t j = 0; j < N; j += 32) {
    const int64_t left = N - j;
    const __mmask16 m0 = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __mmask16 m1 =
        left >= 32 ? __mmask16(0xFFFF) : left <= 16 ? __mmask16(0) : __mmask16((1u << (left - 16)) - 1);
    if (left >= 32)
      tile<MR, true>(K, W, ldw, X + j, ldx, Y + j, ldy, m0, m1, f);
    else
      tile<MR, false>(K, W, ldw, X + j, ldx, Y + j, ldy, m0, m1, f);
  }
}

void conv_gemm_avx512(int64_t M, int64_t N, int64_t K, const float* W, int64_t ldw, const float* X,
                      int64_t ldx, float* Y, int64_t ldy, const float* bias, const Epilogue* ep) {
  Finish f;
  f.bias = bias;
  const avx512::ActVec act(ep ? *ep : Epilogue{});
  if (ep && !ep->trivial()) f.act = &act;
  int64_t m = 0;
  auto sub = [&](int64_t r) {
    Finish fr = f;
    if (fr.bias) fr.bias += r;
    return fr;
  };
  // 8-row tiles (16 accumulators) when they split M evenly, else 6-row tiles and a remainder.
  if (M % 8 == 0)
    for (; m + 8 <= M; m += 8) rows<8>(N, K, W + m * ldw, ldw, X, ldx, Y + m * ldy, ldy, sub(m));
  for (; m + 6 <= M; m += 6) rows<6>(N, K, W + m * ldw, ldw, X, ldx, Y + m * ldy, ldy, sub(m));
  remainder_rows(M - m, [&]<int MR>() { rows<MR>(N, K, W + m * ldw, ldw, X, ldx, Y + m * ldy, ldy, sub(m)); });
}

}  // namespace
MCC_AVX512_END

MCC_AVX2_BEGIN
namespace {

struct Finish2 {
  const float* bias = nullptr;
  const avx2::ActVec* act = nullptr;
};

// Kept out of line, as the AVX-512 tile.
template <int MR, bool Full>
__attribute__((noinline)) void tile2(int64_t K, const float* W, int64_t ldw, const float* X, int64_t ldx, float* Y,
                                     int64_t ldy, __m256i m0, __m256i m1, const Finish2& f) {
  __m256 a0[MR], a1[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    a0[i] = _mm256_setzero_ps();
    a1[i] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < K; ++k) {
    const float* xr = X + k * ldx;
    const __m256 x0 = Full ? _mm256_loadu_ps(xr) : _mm256_maskload_ps(xr, m0);
    const __m256 x1 = Full ? _mm256_loadu_ps(xr + 8) : _mm256_maskload_ps(xr + 8, m1);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 w = _mm256_broadcast_ss(W + i * ldw + k);
      a0[i] = _mm256_fmadd_ps(w, x0, a0[i]);
      a1[i] = _mm256_fmadd_ps(w, x1, a1[i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    __m256 v0 = a0[i], v1 = a1[i];
    if (f.bias) {
      const __m256 b = _mm256_broadcast_ss(f.bias + i);
      v0 = _mm256_add_ps(v0, b);
      v1 = _mm256_add_ps(v1, b);
    }
    if (f.act) {
      v0 = avx2::act_ps(v0, *f.act);
      v1 = avx2::act_ps(v1, *f.act);
    }
    if (Full) {
      _mm256_storeu_ps(Y + i * ldy, v0);
      _mm256_storeu_ps(Y + i * ldy + 8, v1);
    } else {
      _mm256_maskstore_ps(Y + i * ldy, m0, v0);
      _mm256_maskstore_ps(Y + i * ldy + 8, m1, v1);
    }
  }
}

template <int MR>
void rows2(int64_t N, int64_t K, const float* W, int64_t ldw, const float* X, int64_t ldx, float* Y, int64_t ldy,
           const Finish2& f) {
  for (int64_t j = 0; j < N; j += 16) {
    const int64_t left = N - j;
    if (left >= 16) {
      tile2<MR, true>(K, W, ldw, X + j, ldx, Y + j, ldy, __m256i{}, __m256i{}, f);
    } else {
      const __m256i m0 = avx2::lane_mask(std::min<int64_t>(left, 8)), m1 = avx2::lane_mask(std::max<int64_t>(left - 8, 0));
      tile2<MR, false>(K, W, ldw, X + j, ldx, Y + j, ldy, m0, m1, f);
    }
  }
}

void conv_gemm_avx2(int64_t M, int64_t N, int64_t K, const float* W, int64_t ldw, const float* X, int64_t ldx,
                    float* Y, int64_t ldy, const float* bias, const Epilogue* ep) {
  Finish2 f;
  f.bias = bias;
  const avx2::ActVec act(ep ? *ep : Epilogue{});
  if (ep && !ep->trivial()) f.act = &act;
  auto sub = [&](int64_t r) {
    Finish2 fr = f;
    if (fr.bias) fr.bias += r;
    return fr;
  };
  int64_t m = 0;
  for (; m + 6 <= M; m += 6) rows2<6>(N, K, W + m * ldw, ldw, X, ldx, Y + m * ldy, ldy, sub(m));
  remainder_rows(M - m, [&]<int MR>() { rows2<MR>(N, K, W + m * ldw, ldw, X, ldx, Y + m * ldy, ldy, sub(m)); });
}

}  // namespace
MCC_AVX2_END
#endif

bool conv_gemm_f32(int64_t M, int64_t N, int64_t K, const float* W, int64_t ldw, const float* X,
                   int64_t ldx, float* Y, int64_t ldy, const float* bias, const Epilogue* ep) {
#if MCC_X86
  if (cpu_avx512()) {
    conv_gemm_avx512(M, N, K, W, ldw, X, ldx, Y, ldy, bias, ep);
    return true;
  }
  if (cpu_avx2()) {
    conv_gemm_avx2(M, N, K, W, ldw, X, ldx, Y, ldy, bias, ep);
    return true;
  }
#endif
  (void)M, (void)N, (void)K, (void)W, (void)ldw, (void)X, (void)ldx, (void)Y, (void)ldy;
  (void)bias, (void)ep;
  return false;
}

}  // namespace mcc::backends::cpu
