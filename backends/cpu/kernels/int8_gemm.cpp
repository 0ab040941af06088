// u8 x s8 GEMM and row codecs (see int8_gemm.h). The VNNI kernel keeps a 4 x 64 tile of s32
// accumulators in registers (starting at 0 or at the row's row_init value): each step loads 4
// k-quads of 64 columns of B (u8, [k/4][n][4]) and broadcasts one k-quad of each A row (s8);
// vpdpbusd adds the 4 products to each s32 lane without saturation, so the result is exact.
// interleave4 packs B 64 columns at a time.
#include "backends/cpu/kernels/int8_gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "backends/cpu/kernels/cpu_isa.h"
#if MCC_X86
#include <immintrin.h>

#include "backends/cpu/kernels/vnni_avx512.h"
#endif

namespace mcc::backends::cpu {

namespace {
std::atomic<bool> g_simd{true};
}

bool int8_simd_available() { return cpu_avx512_vnni(); }
void set_int8_simd_enabled(bool on) { g_simd.store(on); }
bool int8_simd_enabled() { return g_simd.load(std::memory_order_relaxed); }

PackedS8 pack_s8(const int8_t* w, int64_t M, int64_t K) {
  PackedS8 p;
  p.m = M;
  p.k = K;
  p.kp = (K + 3) / 4 * 4;
  p.data.assign(static_cast<size_t>(M * p.kp), 0);
  p.row_sum.assign(static_cast<size_t>(M), 0);
  for (int64_t m = 0; m < M; ++m) {
    int32_t s = 0;
    for (int64_t k = 0; k < K; ++k) {
      p.data[static_cast<size_t>(m * p.kp + k)] = w[m * K + k];
      s += w[m * K + k];
    }
    p.row_sum[static_cast<size_t>(m)] = s;
  }
  return p;
}

#if MCC_X86
MCC_AVX512_BEGIN
// Columns [0, n / 16 * 16) of interleave4 (rows r advancing by step); returns how many.
int64_t interleave4_avx512(const uint8_t* const r[4], const int64_t step[4], int64_t n,
                           uint8_t* dst) {
  int64_t j = 0;
  // 64 columns: bytes interleaved within each 128-bit lane (lane L of x[i] holds columns
  // 16L + 4i .. 16L + 4i + 3), then a 4 x 4 transpose of the lanes puts them in column order.
  for (; j + 64 <= n; j += 64) {
    const __m512i a0 = _mm512_loadu_si512(r[0] + j * step[0]),
                  a1 = _mm512_loadu_si512(r[1] + j * step[1]);
    const __m512i a2 = _mm512_loadu_si512(r[2] + j * step[2]),
                  a3 = _mm512_loadu_si512(r[3] + j * step[3]);
    const __m512i lo01 = _mm512_unpacklo_epi8(a0, a1), hi01 = _mm512_unpackhi_epi8(a0, a1);
    const __m512i lo23 = _mm512_unpacklo_epi8(a2, a3), hi23 = _mm512_unpackhi_epi8(a2, a3);
    const __m512i x0 = _mm512_unpacklo_epi16(lo01, lo23), x1 = _mm512_unpackhi_epi16(lo01, lo23);
    const __m512i x2 = _mm512_unpacklo_epi16(hi01, hi23), x3 = _mm512_unpackhi_epi16(hi01, hi23);
    const __m512i t0 = _mm512_shuffle_i32x4(x0, x1, 0x44), t1 = _mm512_shuffle_i32x4(x2, x3, 0x44);
    const __m512i t2 = _mm512_shuffle_i32x4(x0, x1, 0xEE), t3 = _mm512_shuffle_i32x4(x2, x3, 0xEE);
    uint8_t* d = dst + j * 4;
    _mm512_storeu_si512(d, _mm512_shuffle_i32x4(t0, t1, 0x88));
    _mm512_storeu_si512(d + 64, _mm512_shuffle_i32x4(t0, t1, 0xDD));
    _mm512_storeu_si512(d + 128, _mm512_shuffle_i32x4(t2, t3, 0x88));
    _mm512_storeu_si512(d + 192, _mm512_shuffle_i32x4(t2, t3, 0xDD));
  }
  for (; j + 16 <= n; j += 16) {
    const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[0] + j * step[0]));
    const __m128i a1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[1] + j * step[1]));
    const __m128i a2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2] + j * step[2]));
    const __m128i a3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[3] + j * step[3]));
    const __m128i lo01 = _mm_unpacklo_epi8(a0, a1), hi01 = _mm_unpackhi_epi8(a0, a1);
    const __m128i lo23 = _mm_unpacklo_epi8(a2, a3), hi23 = _mm_unpackhi_epi8(a2, a3);
    __m128i* d = reinterpret_cast<__m128i*>(dst + j * 4);
    _mm_storeu_si128(d + 0, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(hi01, hi23));
  }
  return j;
}
MCC_AVX512_END
#endif

void interleave4(const uint8_t* const rows[4], int64_t n, uint8_t* dst) {
  static const uint8_t kZeros[64] = {};
  const uint8_t* r[4];
  int64_t step[4];
  for (int i = 0; i < 4; ++i) {
    r[i] = rows[i] ? rows[i] : kZeros;
    step[i] = rows[i] ? 1 : 0;
  }
  int64_t j = 0;
#if MCC_X86
  if (cpu_avx512() && int8_simd_enabled()) j = interleave4_avx512(r, step, n, dst);
#endif
  for (; j < n; ++j)
    for (int i = 0; i < 4; ++i) dst[j * 4 + i] = r[i][j * step[i]];
}

namespace {

void gemm_scalar(const PackedS8& a, int64_t m0, int64_t m1, const uint8_t* b, int64_t np,
                 int64_t ncols, int32_t* c, int64_t ldc, const int32_t* row_init) {
  for (int64_t m = m0; m < m1; ++m) {
    int32_t* crow = c + (m - m0) * ldc;
    std::fill(crow, crow + ncols, row_init ? row_init[m] : 0);
    const int8_t* arow = a.data.data() + m * a.kp;
    for (int64_t k = 0; k < a.kp; ++k) {
      const int32_t w = arow[k];
      if (w == 0) continue;
      const uint8_t* bk = b + (k >> 2) * np * 4 + (k & 3);
      for (int64_t j = 0; j < ncols; ++j) crow[j] += w * static_cast<int32_t>(bk[j * 4]);
    }
  }
}

#if MCC_X86
MCC_AVX512_VNNI_BEGIN
template <int MR, int NR>
void tile(const int8_t* a, int64_t kp, const uint8_t* b, int64_t np, int64_t ncols, int32_t* c,
          int64_t ldc, const int32_t* init) {
  __m512i acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_set1_epi32(init ? init[i] : 0);
  const int64_t k4n = kp / 4;
  for (int64_t k4 = 0; k4 < k4n; ++k4) {
    const uint8_t* bp = b + k4 * np * 4;
    __m512i bv[NR];
    for (int j = 0; j < NR; ++j) bv[j] = _mm512_loadu_si512(bp + j * 64);
    for (int i = 0; i < MR; ++i) {
      int32_t q;
      std::memcpy(&q, a + i * kp + k4 * 4, 4);
      const __m512i av = _mm512_set1_epi32(q);
      for (int j = 0; j < NR; ++j) acc[i][j] = avx512::dpbusd(acc[i][j], bv[j], av);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      const int64_t col = j * 16;
      if (col >= ncols) break;
      int32_t* dst = c + i * ldc + col;
      if (col + 16 <= ncols)
        _mm512_storeu_si512(dst, acc[i][j]);
      else
        _mm512_mask_storeu_epi32(dst, static_cast<__mmask16>((1u << (ncols - col)) - 1), acc[i][j]);
    }
}

template <int NR>
void rows(const PackedS8& a, int64_t m0, int64_t m1, const uint8_t* b, int64_t np, int64_t ncols,
          int32_t* c, int64_t ldc, const int32_t* row_init) {
  int64_t m = m0;
  const int64_t kp = a.kp;
  auto init = [&](int64_t r) { return row_init ? row_init + r : nullptr; };
  for (; m + 4 <= m1; m += 4)
    tile<4, NR>(a.data.data() + m * kp, kp, b, np, ncols, c + (m - m0) * ldc, ldc, init(m));
  for (; m < m1; ++m)
    tile<1, NR>(a.data.data() + m * kp, kp, b, np, ncols, c + (m - m0) * ldc, ldc, init(m));
}
MCC_AVX512_VNNI_END
#endif

#if MCC_X86
MCC_AVX512_VNNI_BEGIN
// gemm_u8s8 on VNNI: 64 columns at a time in register tiles of 1 to 4 vectors.
void gemm_vnni(const PackedS8& a, int64_t m0, int64_t m1, const uint8_t* b, int64_t np,
               int64_t ncols, int32_t* c, int64_t ldc, const int32_t* row_init) {
  for (int64_t j0 = 0; j0 < ncols; j0 += 64) {
    const int64_t nc = std::min<int64_t>(64, ncols - j0);
    const uint8_t* bj = b + j0 * 4;
    int32_t* cj = c + j0;
    switch ((nc + 15) / 16) {
      case 4:
        rows<4>(a, m0, m1, bj, np, nc, cj, ldc, row_init);
        break;
      case 3:
        rows<3>(a, m0, m1, bj, np, nc, cj, ldc, row_init);
        break;
      case 2:
        rows<2>(a, m0, m1, bj, np, nc, cj, ldc, row_init);
        break;
      default:
        rows<1>(a, m0, m1, bj, np, nc, cj, ldc, row_init);
        break;
    }
  }
}
MCC_AVX512_VNNI_END
#endif

}  // namespace

void gemm_u8s8(const PackedS8& a, int64_t m0, int64_t m1, const uint8_t* b, int64_t np,
               int64_t ncols, int32_t* c, int64_t ldc, const int32_t* row_init) {
#if MCC_X86
  if (cpu_avx512_vnni() && int8_simd_enabled())
    return gemm_vnni(a, m0, m1, b, np, ncols, c, ldc, row_init);
#endif
  gemm_scalar(a, m0, m1, b, np, ncols, c, ldc, row_init);
}

// ---------------------------------------------------------------- row codecs

namespace {

template <class T>
void quantize_scalar(const float* x, int64_t n, float scale, float zp, float lo, float hi, T* y) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] / scale;
    y[i] =
        std::isnan(v) ? T(0) : static_cast<T>(std::min(std::max(std::nearbyint(v) + zp, lo), hi));
  }
}

#if MCC_X86
MCC_AVX512_BEGIN
// 16 lanes of round(x / scale) + zp clamped to [lo, hi] as s32 (NaN -> 0).
// Rcp: s holds 1 / scale and x * s is used as is. Otherwise s holds (scale, 1 / scale) as
// (s, inv): x * inv is within 2^-22 (relative) of x / scale, so it rounds the same way except
// near a half-integer; those lanes (rare) take the division.
template <bool Rcp>
inline __m512i quantize16(__m512 x, __m512 s, __m512 z, __m512 lo, __m512 hi,
                          __m512 inv = _mm512_setzero_ps()) {
  __m512 v;
  if (Rcp) {
    v = _mm512_mul_ps(x, s);
  } else {
    v = _mm512_mul_ps(x, inv);
    const __m512 f =
        _mm512_sub_ps(v, _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
    const __m512 d = _mm512_abs_ps(_mm512_sub_ps(f, _mm512_set1_ps(0.5f)));
    const __m512 tol =
        _mm512_fmadd_ps(_mm512_abs_ps(v), _mm512_set1_ps(0x1p-20f), _mm512_set1_ps(0x1p-30f));
    const __mmask16 near =
        _mm512_cmp_ps_mask(d, tol, _CMP_LE_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    if (near) v = _mm512_mask_div_ps(v, near, x, s);
  }
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  __m512 r =
      _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
  r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
  return _mm512_maskz_cvtps_epi32(static_cast<__mmask16>(~nan), r);
}

// The first n / 16 * 16 values of quantize_row_u8/s8 and dequantize_row_u8/s8; each returns how
// many it did.
template <class T>
int64_t quantize_row_avx512(const float* x, int64_t n, float scale, float zp, T* y,
                            bool reciprocal) {
  constexpr bool u8 = std::is_same_v<T, uint8_t>;
  const __m512 z = _mm512_set1_ps(zp), lo = _mm512_set1_ps(u8 ? 0.f : -128.f),
               hi = _mm512_set1_ps(u8 ? 255.f : 127.f);
  auto store = [&](int64_t i, __m512i q) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     u8 ? _mm512_cvtusepi32_epi8(q) : _mm512_cvtsepi32_epi8(q));
  };
  int64_t i = 0;
  if (reciprocal) {
    const __m512 s = _mm512_set1_ps(1.f / scale);
    for (; i + 16 <= n; i += 16) store(i, quantize16<true>(_mm512_loadu_ps(x + i), s, z, lo, hi));
  } else {
    const __m512 s = _mm512_set1_ps(scale), inv = _mm512_set1_ps(1.f / scale);
    for (; i + 16 <= n; i += 16)
      store(i, quantize16<false>(_mm512_loadu_ps(x + i), s, z, lo, hi, inv));
  }
  return i;
}

template <class T>
int64_t dequantize_row_avx512(const T* x, int64_t n, float scale, float zp, float* y) {
  const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(zp);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m512i w =
        std::is_same_v<T, uint8_t> ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(w), z), s));
  }
  return i;
}
MCC_AVX512_END
#endif

bool simd_rows() {
#if MCC_X86
  return cpu_avx512() && int8_simd_enabled();
#else
  return false;
#endif
}

}  // namespace

void quantize_row_u8(const float* x, int64_t n, float scale, float zp, uint8_t* y,
                     bool reciprocal) {
  int64_t i = 0;
#if MCC_X86
  if (simd_rows()) i = quantize_row_avx512(x, n, scale, zp, y, reciprocal);
#endif
  quantize_scalar<uint8_t>(x + i, n - i, scale, zp, 0.f, 255.f, y + i);
}

void quantize_row_s8(const float* x, int64_t n, float scale, float zp, int8_t* y, bool reciprocal) {
  int64_t i = 0;
#if MCC_X86
  if (simd_rows()) i = quantize_row_avx512(x, n, scale, zp, y, reciprocal);
#endif
  quantize_scalar<int8_t>(x + i, n - i, scale, zp, -128.f, 127.f, y + i);
}

void dequantize_row_u8(const uint8_t* x, int64_t n, float scale, float zp, float* y) {
  int64_t i = 0;
#if MCC_X86
  if (simd_rows()) i = dequantize_row_avx512(x, n, scale, zp, y);
#endif
  for (; i < n; ++i) y[i] = (static_cast<float>(x[i]) - zp) * scale;
}

void dequantize_row_s8(const int8_t* x, int64_t n, float scale, float zp, float* y) {
  int64_t i = 0;
#if MCC_X86
  if (simd_rows()) i = dequantize_row_avx512(x, n, scale, zp, y);
#endif
  for (; i < n; ++i) y[i] = (static_cast<float>(x[i]) - zp) * scale;
}

void dequantize_row_s32(const int32_t* x, int64_t n, float scale, float zp, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(x[i]) - zp) * scale;
}

}  // namespace mcc::backends::cpu
