// The f32 epilogue of the integer QDQ conv kernels on 16 lanes (qdq_conv_fusion.cpp,
// qdq_depthwise_c16.cpp): the activation in the f32 operations apply_epilogue uses, then the
// output quantization (x / y_scale as x * (1 / y_scale), round half to even, saturate; NaN -> 0),
// narrowed lane by lane or four vectors at a time into 64 stored bytes (qdq_store64).
// The lanes may be 16 positions of one channel or 16 channels of one position: every parameter
// is a vector.
// Compiled for AVX-512 wherever it is included on x86 (cpu_isa.h): called only where
// cpu_avx512() holds; include it with `#if MCC_X86`.
#pragma once
#include <immintrin.h>

#include "backends/cpu/kernels/cpu_isa.h"

#include "backends/cpu/kernels/conv_act_avx512.h"
#include "backends/cpu/kernels/conv_fusion.h"

MCC_AVX512_BEGIN
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

/// qdq_act16 on each of N vectors; SiLU (the costly one) steps through the N vectors together
/// (silu_ps_n), which gives each vector the bits qdq_act16 gives it. InRange: the SiLU inputs
/// are known to lie within its exp clamp (silu_ps_n's InRange).
template <Epilogue::Act Act, int N, bool InRange = false>
inline void qdq_act16_n(__m512 (&v)[N], const Epilogue& e) {
  if constexpr (Act == Epilogue::Act::SiLU) {
    silu_ps_n<N, InRange>(v);
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) v[i] = qdq_act16<Act>(v[i], e);
  }
}

/// round(v * inv) + z in s32 lanes, before saturation to the output type: v (already
/// activated) quantized with 1 / y_scale `inv` and zero point `z` per lane, round half to even.
/// NaN lanes give 0 for s8 and a value below 0 (which saturates to 0) for u8.
/// Clamp = false when |v * inv| is known to stay below 1e8 (bounded accumulators or a bounded
/// activation): the clamps that keep the conversion in range are then no-ops, NaN included.
template <bool Clamp = true>
inline __m512i qdq_round16(__m512 v, __m512 inv, __m512i z, bool u8) {
  // Beyond +-2^31 cvtps gives INT_MIN. min(big, t) keeps NaN, which converts to INT_MIN: below
  // 0 after adding z (u8); s8 lanes take 0 from the NaN mask.
  const __m512 big = _mm512_set1_ps(1e9f), small = _mm512_set1_ps(-1e9f);
  __m512 t = _mm512_mul_ps(v, inv);
  if constexpr (Clamp) t = _mm512_max_ps(small, _mm512_min_ps(big, t));
  const __m512i qi = _mm512_add_epi32(_mm512_cvtps_epi32(t), z);  // nearest even
  return u8 ? qi : _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q), qi, _mm512_setzero_si512());
}

/// qdq_round16 at or above the type's lowest value, which the saturating narrowing
/// (_mm512_cvtusepi32_epi8 for u8, _mm512_cvtsepi32_epi8 for s8) turns into the stored bytes.
template <bool Clamp = true>
inline __m512i qdq_quantize16(__m512 v, __m512 inv, __m512i z, bool u8) {
  return _mm512_max_epi32(qdq_round16<Clamp>(v, inv, z, u8), _mm512_set1_epi32(u8 ? 0 : -128));
}

/// Four vectors of qdq_round16 values saturated to u8 (or s8) and stored as the n (<= 64) bytes
/// q[0][0..15], q[1][0..15], ... at dst. Signed saturation to s16, then to u8/s8, gives the
/// same bytes as clamping the s32 values to the type's range.
inline void qdq_store64(void* dst, const __m512i (&q)[4], bool u8, int64_t n) {
  const __m512i a = _mm512_packs_epi32(q[0], q[1]), b = _mm512_packs_epi32(q[2], q[3]);
  // Per 128-bit lane L the packs leave q[0][4L..4L+3], q[1][4L..], q[2][4L..], q[3][4L..]: dword
  // 4L + i holds 4 bytes of q[i].
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i p = _mm512_permutexvar_epi32(idx, u8 ? _mm512_packus_epi16(a, b) : _mm512_packs_epi16(a, b));
  if (n >= 64) _mm512_storeu_si512(dst, p);
  else _mm512_mask_storeu_epi8(dst, (__mmask64{1} << n) - 1, p);
}

/// Calls f.template operator()<Act, Clamp, InRange>() with the epilogue's activation, the clamp
/// flag and, for SiLU, whether its inputs are known to lie within its exp clamp (silu_in_range;
/// false for the other activations) as template arguments: one instantiation of the caller's
/// loop per combination.
template <class F>
inline void with_qdq_epilogue(const Epilogue& e, bool clamp, bool silu_in_range, F&& f) {
  using A = Epilogue::Act;
  auto go = [&]<A Act, bool InRange = false>() {
    if (clamp) f.template operator()<Act, true, InRange>();
    else f.template operator()<Act, false, InRange>();
  };
  switch (e.act) {
    case A::None: return go.template operator()<A::None>();
    case A::Relu: return go.template operator()<A::Relu>();
    case A::Clip: return go.template operator()<A::Clip>();
    case A::Sigmoid: return go.template operator()<A::Sigmoid>();
    case A::SiLU:
      if (silu_in_range) return go.template operator()<A::SiLU, true>();
      return go.template operator()<A::SiLU>();
    case A::LeakyRelu: return go.template operator()<A::LeakyRelu>();
    case A::HardSigmoid: return go.template operator()<A::HardSigmoid>();
    case A::HardSwish: return go.template operator()<A::HardSwish>();
  }
}

}  // namespace mcc::backends::cpu::avx512
MCC_AVX512_END
