// The f32 epilogue of the integer QDQ conv kernels on 16 lanes (qdq_conv_fusion.cpp,
// qdq_depthwise_c16.cpp): the activation in the f32 operations apply_epilogue uses, then the
// output quantization (x / y_scale as x * (1 / y_scale), round half to even, saturate; NaN -> 0).
// The lanes may be 16 positions of one channel or 16 channels of one position: every parameter
// is a vector.
// Only included by AVX-512 builds (guard the include with __AVX512F__).
#pragma once
#include <immintrin.h>

#include "backends/cpu/kernels/conv_act_avx512.h"
#include "backends/cpu/kernels/conv_fusion.h"

namespace mcc::backends::cpu::avx512 {

/// The activation of the epilogue on 16 lanes, in the f32 operations apply_epilogue uses.
template <Epilogue::Act Act>
inline __m512 qdq_act16(__m512 v, const Epilogue& e) {
  using A = Epilogue::Act;
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.f);
  switch (Act) {
    case A::None: return v;
    case A::Relu: return _mm512_max_ps(v, zero);
    case A::Clip:
      // v < lo ? lo : v, then v > hi ? hi : v: maxps/minps return their second operand when the
      // two compare equal or either is NaN, so NaN and the sign of zero are kept as the compares
      // keep them.
      return _mm512_min_ps(_mm512_set1_ps(e.beta), _mm512_max_ps(_mm512_set1_ps(e.alpha), v));
    case A::Sigmoid: return sigmoid_ps(v);
    case A::SiLU: return silu_ps(v);
    case A::LeakyRelu:
      return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, _mm512_mul_ps(v, _mm512_set1_ps(e.alpha)));
    case A::HardSigmoid:
      return _mm512_max_ps(zero, _mm512_min_ps(one, _mm512_fmadd_ps(v, _mm512_set1_ps(e.alpha), _mm512_set1_ps(e.beta))));
    case A::HardSwish: {
      const __m512 t = _mm512_add_ps(_mm512_div_ps(v, _mm512_set1_ps(6.f)), _mm512_set1_ps(0.5f));
      return _mm512_mul_ps(v, _mm512_max_ps(zero, _mm512_min_ps(one, t)));
    }
  }
  return v;
}

/// v (already activated) quantized with 1 / y_scale `inv` and zero point `z` per lane: s32
/// lanes at or above the type's lowest value, which the saturating narrowing
/// (_mm512_cvtusepi32_epi8 for u8, _mm512_cvtsepi32_epi8 for s8) turns into the stored bytes.
/// Clamp = false when |v * inv| is known to stay below 1e9 (a bounded activation): the clamps are
/// then no-ops, NaN included.
template <bool Clamp = true>
inline __m512i qdq_quantize16(__m512 v, __m512 inv, __m512i z, bool u8) {
  // Clamps before the conversion: beyond +-2^31 cvtps gives INT_MIN. min(big, t) keeps NaN, which
  // converts to INT_MIN and so saturates to 0 (u8) / -128 (s8: fixed up by the NaN mask below).
  const __m512 big = _mm512_set1_ps(1e9f), small = _mm512_set1_ps(-1e9f);
  const __m512i lo = _mm512_set1_epi32(u8 ? 0 : -128);
  __m512 t = _mm512_mul_ps(v, inv);
  if constexpr (Clamp) t = _mm512_max_ps(small, _mm512_min_ps(big, t));
  const __m512i qi = _mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(t), z), lo);  // nearest even
  return u8 ? qi : _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q), qi, _mm512_setzero_si512());
}

}  // namespace mcc::backends::cpu::avx512
