// Conv epilogue activations on AVX-512 registers (16 floats): the Epilogue of conv_fusion.h
// applied to one vector, for the conv GEMM's and direct kernel's register tiles (with the k step
// and the finish those tiles share) and the f32 epilogue pass (conv_fusion.cpp). exp is Cephes'
// expf polynomial on n*ln2 range reduction (about 1 ulp) scaled with vscalefps; Sigmoid is
// 1/(1+exp(-x)) (reciprocal by rcp14 + a Newton step), SiLU x*sigmoid(x) (silu_ps: a shorter
// exp, about 3 ulp); NaN stays NaN.
// Compiled for AVX-512 wherever it is included on x86 (cpu_isa.h): called only where
// cpu_avx512() holds; include it with `#if MCC_X86`.
#pragma once
#include <immintrin.h>

#include "backends/cpu/kernels/cpu_isa.h"

#include "backends/cpu/kernels/conv_fusion.h"

MCC_AVX512_BEGIN
namespace mcc::backends::cpu::avx512 {

/// exp(x) for 16 floats; inputs are clamped to [-87.3, 88.7] (NaN passes through).
inline __m512 exp_ps(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-87.3f), x);  // (c, x): NaN in x is returned as is
  x = _mm512_min_ps(_mm512_set1_ps(88.7f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return _mm512_scalef_ps(p, n);
}

/// 1/y for 16 floats: rcp14 and one Newton step (about 1 ulp; reciprocals below the normal
/// range flush to 0).
inline __m512 recip_ps(__m512 y) {
  const __m512 r = _mm512_rcp14_ps(y);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(y, r, _mm512_set1_ps(2.f)));
}

/// 1 / (1 + exp(-x)) for 16 floats (exp_ps and recip_ps).
inline __m512 sigmoid_ps(__m512 x) {
  return recip_ps(_mm512_add_ps(_mm512_set1_ps(1.f), exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

/// x * sigmoid(x) = x / (1 + exp(-x)) on each of N vectors of 16 floats, with fewer operations
/// than x * sigmoid_ps(x): exp(-x) = 2^n * e^r with n = round(-x * log2(e)) and r reduced with
/// ln 2 in two parts, e^r by a degree-5 polynomial fitted for relative error on [-ln2/2, ln2/2]
/// (1.4e-7), then one reciprocal with a Newton step. About 3 ulp from the exact value (sigmoid_ps:
/// about 1); NaN stays NaN. Each step runs on all N vectors before the next, so the N dependency
/// chains (about 20 operations each) overlap; every vector gets the same operations, hence the
/// same bits, whatever N. InRange: the caller knows every lane lies in [-87.3, 88.7] (or is NaN),
/// where the clamp below changes nothing, so it is left out (the same bits, two operations less).
template <int N, bool InRange = false>
inline void silu_ps_n(__m512 (&x)[N]) {
  __m512 n[N], r[N], p[N];
  // exp(-x) for x clamped to [-87.3, 88.7] (as exp_ps; NaN kept): finite, so d below is too.
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i)
    r[i] = InRange ? x[i] : _mm512_max_ps(_mm512_set1_ps(-87.3f), _mm512_min_ps(_mm512_set1_ps(88.7f), x[i]));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i)
    n[i] = _mm512_roundscale_ps(_mm512_mul_ps(r[i], _mm512_set1_ps(-1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) r[i] = _mm512_fnmsub_ps(n[i], _mm512_set1_ps(0.693359375f), r[i]);  // -x - n * ln2_hi
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) r[i] = _mm512_fnmadd_ps(n[i], _mm512_set1_ps(-2.12194440e-4f), r[i]);  // - n * ln2_lo
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = _mm512_fmadd_ps(_mm512_set1_ps(0.00829765387f), r[i], _mm512_set1_ps(0.0419153832f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = _mm512_fmadd_ps(p[i], r[i], _mm512_set1_ps(0.166675746f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = _mm512_fmadd_ps(p[i], r[i], _mm512_set1_ps(0.499988943f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = _mm512_fmadd_ps(p[i], r[i], _mm512_set1_ps(0.999999702f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = _mm512_fmadd_ps(p[i], r[i], _mm512_set1_ps(1.00000012f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = _mm512_add_ps(_mm512_set1_ps(1.f), _mm512_scalef_ps(p[i], n[i]));  // d
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) r[i] = _mm512_rcp14_ps(p[i]);
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) x[i] = _mm512_mul_ps(x[i], _mm512_mul_ps(r[i], _mm512_fnmadd_ps(p[i], r[i], _mm512_set1_ps(2.f))));
}

/// silu_ps_n on one vector.
inline __m512 silu_ps(__m512 x) {
  __m512 v[1] = {x};
  silu_ps_n(v);
  return v[0];
}

/// Epilogue constants broadcast once per block.
struct ActVec {
  Epilogue::Act act = Epilogue::Act::None;
  __m512 lo, hi;
  explicit ActVec(const Epilogue& e) : act(e.act) {
    lo = _mm512_set1_ps(e.act == Epilogue::Act::Relu ? 0.f : e.alpha);
    hi = _mm512_set1_ps(e.act == Epilogue::Act::Relu ? __builtin_inff() : e.beta);
  }
};

/// act(v) as conv_fusion.h defines it: Relu/Clip as v < lo ? lo : v > hi ? hi : v (NaN kept),
/// LeakyRelu v < 0 ? alpha*v : v, HardSigmoid max(0, min(1, alpha*v + beta)), HardSwish
/// v * max(0, min(1, v*(1/6) + 0.5)).
inline __m512 act_ps(__m512 v, const ActVec& a) {
  using A = Epilogue::Act;
  const __m512 one = _mm512_set1_ps(1.f), zero = _mm512_setzero_ps();
  switch (a.act) {
    case A::None: return v;
    case A::Relu:
    case A::Clip:
      v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, a.hi, _CMP_GT_OQ), v, a.hi);
      return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, a.lo, _CMP_LT_OQ), v, a.lo);
    case A::Sigmoid:
      return sigmoid_ps(v);
    case A::SiLU:
      return silu_ps(v);
    case A::LeakyRelu:
      return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, a.lo);
    case A::HardSigmoid:
      return _mm512_max_ps(zero, _mm512_min_ps(one, _mm512_fmadd_ps(a.lo, v, a.hi)));
    case A::HardSwish: {
      const __m512 t = _mm512_fmadd_ps(v, _mm512_set1_ps(1.f / 6.f), _mm512_set1_ps(0.5f));
      return _mm512_mul_ps(v, _mm512_max_ps(zero, _mm512_min_ps(one, t)));
    }
  }
  return v;
}

/// act_ps on n vectors with the activation chosen once (the n evaluations interleave).
template <int N>
inline void act_ps_n(__m512 (&v)[N], const ActVec& a) {
  using A = Epilogue::Act;
  switch (a.act) {
    case A::None: return;
#define MCC_ACT_CASE(K)                                            \
  case K: {                                                        \
    ActVec c = a;                                                  \
    c.act = K;                                                     \
    _Pragma("GCC unroll 16") for (int i = 0; i < N; ++i) v[i] = act_ps(v[i], c); \
    return;                                                        \
  }
    MCC_ACT_CASE(A::Relu)
    MCC_ACT_CASE(A::Clip)
    MCC_ACT_CASE(A::Sigmoid)
    MCC_ACT_CASE(A::SiLU)
    MCC_ACT_CASE(A::LeakyRelu)
    MCC_ACT_CASE(A::HardSigmoid)
    MCC_ACT_CASE(A::HardSwish)
#undef MCC_ACT_CASE
  }
}

/// One k step of an MR x 32 register tile: row i accumulates W[i * ldw + k] times the 32 inputs
/// (x0: columns 0-15, x1: 16-31).
template <int MR>
inline void fma_tile_step(const float* W, int64_t ldw, int64_t k, __m512 x0, __m512 x1, __m512* a0, __m512* a1) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512 w = _mm512_set1_ps(W[i * ldw + k]);
    a0[i] = _mm512_fmadd_ps(w, x0, a0[i]);
    a1[i] = _mm512_fmadd_ps(w, x1, a1[i]);
  }
}

/// What finishes a register tile in the conv kernels: + bias[row], then the activation.
struct TileFinish {
  const float* bias = nullptr;
  const ActVec* act = nullptr;
};

/// Finishes an MR x 32 tile of accumulators (a0: columns 0-15, a1: 16-31 of each row) and stores
/// row i at Y + i * ldy under the lane masks m0 / m1.
template <int MR>
inline void finish_tile(const __m512* a0, const __m512* a1, const TileFinish& f, float* Y, int64_t ldy,
                        __mmask16 m0, __mmask16 m1) {
  __m512 v[2 * MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512 b = f.bias ? _mm512_set1_ps(f.bias[i]) : _mm512_setzero_ps();
    v[2 * i] = f.bias ? _mm512_add_ps(a0[i], b) : a0[i];
    v[2 * i + 1] = f.bias ? _mm512_add_ps(a1[i], b) : a1[i];
  }
  if (f.act) act_ps_n(v, *f.act);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(Y + i * ldy, m0, v[2 * i]);
    _mm512_mask_storeu_ps(Y + i * ldy + 16, m1, v[2 * i + 1]);
  }
}

}  // namespace mcc::backends::cpu::avx512
MCC_AVX512_END
