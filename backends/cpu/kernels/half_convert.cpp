// Bulk f16 <-> f32 conversion (see half_convert.h).
#include "backends/cpu/kernels/half_convert.h"

#include <cmath>
#include <cstring>

#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#endif

namespace mcc::backends::cpu {

void f16_to_f32(const f16* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
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
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
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
