// y = [QuantizeLinear](a + DequantizeLinear(r)) in tiles of 1024 elements (see qdq_residual_add.h):
// each tile of r is dequantized into a stack buffer, a is added, and the sum is quantized (or
// stored as f32) from there.
#include "backends/cpu/kernels/qdq_residual_add.h"

#include <algorithm>

#include "backends/cpu/kernels/int8_gemm.h"

namespace mcc::backends::cpu {

void residual_add(const KernelContext& ctx, const ResidualAdd& ra, const float* a, const void* r, int64_t n,
                  std::byte* y) {
  constexpr int64_t kTile = 1024;
  ctx.parallel_for((n + kTile - 1) / kTile, kTile * 4, [&](int64_t t0, int64_t t1) {
    alignas(64) float d[kTile];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t lo = t * kTile, cnt = std::min(kTile, n - lo);
      if (ra.r_u8) dequantize_row_u8(static_cast<const uint8_t*>(r) + lo, cnt, ra.r_scale, ra.r_zero, d);
      else dequantize_row_s8(static_cast<const int8_t*>(r) + lo, cnt, ra.r_scale, ra.r_zero, d);
      const float* at = a + lo;
      if (!ra.quant_out) {
        float* yt = reinterpret_cast<float*>(y) + lo;
        for (int64_t i = 0; i < cnt; ++i) yt[i] = at[i] + d[i];
        continue;
      }
      for (int64_t i = 0; i < cnt; ++i) d[i] = at[i] + d[i];
      if (ra.out_u8) quantize_row_u8(d, cnt, ra.y_scale, ra.y_zero, reinterpret_cast<uint8_t*>(y) + lo);
      else quantize_row_s8(d, cnt, ra.y_scale, ra.y_zero, reinterpret_cast<int8_t*>(y) + lo);
    }
  });
}

}  // namespace mcc::backends::cpu
