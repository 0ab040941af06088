// The residual of the QDQ conv fusion (qdq_conv_fusion.cpp): y = a + DequantizeLinear(r), then
// QuantizeLinear when the Add's only reader is one, over tensors of one shape. a is the conv's
// activated f32 output; r the u8 or s8 tensor the residual DequantizeLinear reads, with a
// per-tensor scale and zero point. The operations are those of the DequantizeLinear, Add and
// QuantizeLinear kernels run one by one (dequantize_row_*, one f32 add, quantize_row_* dividing
// by the scale), so the bytes are theirs, and the dequantized r is never stored.
// Does not apply to broadcasting Adds or per-axis parameters (the fusion checks the shapes when
// it runs and leaves those Adds alone at plan time).
#pragma once
#include <cstddef>
#include <cstdint>

#include "backends/backend.h"

namespace mcc::backends::cpu {

struct ResidualAdd {
  float r_scale = 1.f, r_zero = 0.f;  // the residual DequantizeLinear
  bool r_u8 = true;                   // r is u8 (else s8)
  bool quant_out = false;             // a QuantizeLinear follows the Add
  bool out_u8 = true;                 // its output type (else s8)
  float y_scale = 1.f, y_zero = 0.f;
};

/// y[i] = [Q](a[i] + DQ(r[i])) for i < n; y may be a itself when the output is f32.
void residual_add(const KernelContext& ctx, const ResidualAdd& ra, const float* a, const void* r, int64_t n,
                  std::byte* y);

}  // namespace mcc::backends::cpu
