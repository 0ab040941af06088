// QuantizeLinear and DequantizeLinear on the device, per-tensor or per-axis scale and zero point
// (both read from device memory). Quantized types u8, i8, u16, i16 (and i32 for dequantization);
// float types f32 and f16. Arithmetic in f32 as the cpu kernel: y = saturate(round_half_even(x /
// scale) + zero_point) with NaN quantized to 0, and x = (q - zero_point) * scale.
// Plain C++ declarations; bodies in quantize.cu.
// Does not apply to: blocked scales, float8/float4, packed 4-bit and 2-bit types, bf16.
#pragma once
#include <cstdint>

namespace mcc::cuda {

enum class QuantElem : int { U8, I8, U16, I16, I32, F32, F16 };

/// Element i uses scale (and zero point) entry 0 when per_tensor, else (i / inner) % axis_len.
struct QuantLayout {
  int64_t count = 0;
  int64_t axis_len = 1;
  int64_t inner = 1;
  bool per_tensor = true;
};

/// x: F32, F16 or I32; scale: F32 or F16; y and the zero point (nullptr: 0): U8, I8, U16, I16.
void quantize_linear(const void* x, QuantElem x_type, const void* scale, QuantElem scale_type,
                     const void* zero_point, void* y, QuantElem y_type, const QuantLayout& layout);

/// x and the zero point (nullptr: 0): U8, I8, U16, I16, I32; scale and y: F32 or F16.
void dequantize_linear(const void* x, QuantElem x_type, const void* scale, QuantElem scale_type,
                       const void* zero_point, void* y, QuantElem y_type, const QuantLayout& layout);

}  // namespace mcc::cuda
