// Integer building blocks of the quantized cpu kernels: a u8 x s8 -> s32 GEMM (AVX-512 VNNI
// vpdpbusd where the build has it, a scalar loop otherwise or when switched off), the packing of
// its operands, and row-wise QuantizeLinear / DequantizeLinear for f32 <-> u8/s8/s32 with a single
// scale and zero point (round half to even, saturating; NaN quantizes to 0). Not for blocked or
// 4-bit formats (quantize.cpp handles those element by element).
#pragma once
#include <cstdint>
#include <vector>

namespace mcc::backends::cpu {

/// Whether gemm_u8s8 and the row codecs use AVX-512 (VNNI for the GEMM) in this build.
bool int8_simd_available();
/// Turns the SIMD paths off (false) or back on; tests use it to check the scalar fallback.
void set_int8_simd_enabled(bool on);
bool int8_simd_enabled();

/// Weights A[M, K] s8 packed for gemm_u8s8: rows of kp = round_up(K, 4) bytes (zero padded),
/// and each row's sum (the zero-point correction: acc -= x_zero_point * row_sum).
struct PackedS8 {
  int64_t m = 0, k = 0, kp = 0;
  std::vector<int8_t> data;
  std::vector<int32_t> row_sum;
};
PackedS8 pack_s8(const int8_t* w, int64_t M, int64_t K);

/// Width of a packed u8 panel: n rounded up to 16 columns.
inline int64_t panel_width(int64_t n) { return (n + 15) / 16 * 16; }
/// Byte offset of element (k, col) in a packed u8 panel of width np: [kp / 4][np][4].
inline int64_t panel_offset(int64_t k, int64_t col, int64_t np) { return ((k >> 2) * np + col) * 4 + (k & 3); }

/// Packs rows k0..k0+3 of a u8 matrix (row pointers; null rows read as 0) into a panel of width
/// np at k-quad k0 / 4: dst[(j * 4) + i] = rows[i][j] for j < n.
void interleave4(const uint8_t* const rows[4], int64_t n, uint8_t* dst);

/// C[m0:m1, 0:ncols] (row stride ldc) = A[m0:m1, :] * B[:, 0:ncols] in s32, where B points at
/// column 0 of the block in a packed panel of width np. ncols <= 64 for the SIMD path's tiles;
/// any ncols is accepted (blocks of 64 internally). With row_init, row m starts from row_init[m]
/// (m counted from 0, not from m0) instead of 0: a zero-point correction costs nothing there.
void gemm_u8s8(const PackedS8& a, int64_t m0, int64_t m1, const uint8_t* b, int64_t np, int64_t ncols,
               int32_t* c, int64_t ldc, const int32_t* row_init = nullptr);

/// y[i] = saturate(nearbyint(x[i] / scale) + zp) into [lo, hi]; NaN -> 0. With `reciprocal`
/// the SIMD path multiplies by 1 / scale instead (faster; a value within one f32 ulp of a rounding
/// tie may land one unit off).
void quantize_row_u8(const float* x, int64_t n, float scale, float zp, uint8_t* y, bool reciprocal = false);
void quantize_row_s8(const float* x, int64_t n, float scale, float zp, int8_t* y, bool reciprocal = false);
/// y[i] = (x[i] - zp) * scale.
void dequantize_row_u8(const uint8_t* x, int64_t n, float scale, float zp, float* y);
void dequantize_row_s8(const int8_t* x, int64_t n, float scale, float zp, float* y);
void dequantize_row_s32(const int32_t* x, int64_t n, float scale, float zp, float* y);

}  // namespace mcc::backends::cpu
