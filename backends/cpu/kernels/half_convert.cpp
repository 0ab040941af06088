// Bulk f16 <-> f32 conversion (see half_convert.h).
#include "backends/cpu/kernels/half_convert.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/cpu_isa.h"

#if MCC_X86
#include <immintrin.h>
#endif

namespace mcc::backends::cpu {

namespace {
#if MCC_X86
// The first n / 16 * 16 (AVX-512) or n / 8 * 8 (F16C) values; each returns how many it converted.
MCC_AVX512_BEGIN
int64_t f16_to_f32_avx512(const f16* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  return i;
}
int64_t f32_to_f16_avx512(const float* src, f16* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return i;
}
MCC_AVX512_END
MCC_AVX2_BEGIN
int64_t f16_to_f32_f16c(const f16* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  return i;
}
int64_t f32_to_f16_f16c(const float* src, f16* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return i;
}
MCC_AVX2_END
#endif
}  // namespace

void f16_to_f32(const f16* src, float* dst, int64_t n) {
  int64_t i = 0;
#if MCC_X86
  if (cpu_avx512()) i = f16_to_f32_avx512(src, dst, n);
  else if (cpu_avx2()) i = f16_to_f32_f16c(src, dst, n);
#endif
  // The tail quiets NaNs as the instructions do, so a value's bits do not depend on its position.
  for (; i < n; ++i) {
    float f = static_cast<float>(src[i]);
    if (std::isnan(f)) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      u |= 0x00400000u;
      std::memcpy(&f, &u, 4);
    }
    dst[i] = f;
  }
}

void f32_to_f16(const float* src, f16* dst, int64_t n) {
  int64_t i = 0;
#if MCC_X86
  if (cpu_avx512()) i = f32_to_f16_avx512(src, dst, n);
  else if (cpu_avx2()) i = f32_to_f16_f16c(src, dst, n);
#endif
  for (; i < n; ++i) dst[i] = f16(src[i]);
}

std::vector<float> f16_values(const ir::Tensor& t) {
  const auto d = t.data<f16>();
  std::vector<float> v(d.size());
  f16_to_f32(d.data(), v.data(), static_cast<int64_t>(d.size()));
  return v;
}

}  // namespace mcc::backends::cpu
