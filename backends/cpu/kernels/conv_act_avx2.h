// Conv epilogue activations on AVX2 registers (8 floats): the Epilogue of conv_fusion.h applied to
// one vector, for the AVX2 conv GEMM's register tiles (conv_gemm.cpp) and the f32 epilogue pass
// (conv_fusion.cpp) on CPUs without AVX-512. exp is Cephes' expf polynomial on n*ln2 range
// reduction (about 1 ulp; inputs clamped to [-87.3, 88.3] so 2^n stays a normal float), Sigmoid
// 1/(1+exp(-x)) and SiLU x/(1+exp(-x)) with a true division; NaN stays NaN. The values are within a
// few ulp of the AVX-512 path's, not bit-identical to them.
// Compiled for AVX2+FMA wherever it is included on x86 (cpu_isa.h): called only where cpu_avx2()
// holds; include it with `#if MCC_X86`.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/kernels/conv_fusion.h"
#include "backends/cpu/kernels/cpu_isa.h"

MCC_AVX2_BEGIN
namespace mcc::backends::cpu::avx2 {

/// exp(x) for 8 floats; inputs are clamped to [-87.3, 88.3] (NaN passes through).
inline __m256 exp_ps(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-87.3f), x);  // (c, x): NaN in x is returned as is
  x = _mm256_min_ps(_mm256_set1_ps(88.3f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  // 2^n from the exponent bits (n in [-126, 127] after the clamp; NaN lanes give garbage here
  // but p is NaN there, and NaN * anything stays NaN).
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/// 1 / (1 + exp(-x)) for 8 floats.
inline __m256 sigmoid_ps(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

/// x / (1 + exp(-x)) for 8 floats.
inline __m256 silu_ps(__m256 x) {
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.f), exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

/// Epilogue constants broadcast once per block.
struct ActVec {
  Epilogue::Act act = Epilogue::Act::None;
  __m256 lo, hi;
  explicit ActVec(const Epilogue& e) : act(e.act) {
    lo = _mm256_set1_ps(e.act == Epilogue::Act::Relu ? 0.f : e.alpha);
    hi = _mm256_set1_ps(e.act == Epilogue::Act::Relu ? __builtin_inff() : e.beta);
  }
};

/// act(v) as conv_fusion.h defines it (Relu/Clip keep NaN, as the AVX-512 path).
inline __m256 act_ps(__m256 v, const ActVec& a) {
  using A = Epilogue::Act;
  const __m256 one = _mm256_set1_ps(1.f), zero = _mm256_setzero_ps();
  switch (a.act) {
    case A::None: return v;
    case A::Relu:
    case A::Clip:
      v = _mm256_blendv_ps(v, a.hi, _mm256_cmp_ps(v, a.hi, _CMP_GT_OQ));
      return _mm256_blendv_ps(v, a.lo, _mm256_cmp_ps(v, a.lo, _CMP_LT_OQ));
    case A::Sigmoid: return sigmoid_ps(v);
    case A::SiLU: return silu_ps(v);
    case A::LeakyRelu: return _mm256_blendv_ps(v, _mm256_mul_ps(v, a.lo), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
    case A::HardSigmoid: return _mm256_max_ps(zero, _mm256_min_ps(one, _mm256_fmadd_ps(a.lo, v, a.hi)));
    case A::HardSwish: {
      const __m256 t = _mm256_fmadd_ps(v, _mm256_set1_ps(1.f / 6.f), _mm256_set1_ps(0.5f));
      return _mm256_mul_ps(v, _mm256_max_ps(zero, _mm256_min_ps(one, t)));
    }
  }
  return v;
}

/// Lane mask for the first `n` of 8 lanes (n in [0, 8]), for maskload/maskstore.
inline __m256i lane_mask(int64_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
}

}  // namespace mcc::backends::cpu::avx2
MCC_AVX2_END
