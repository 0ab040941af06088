// Bulk f16 <-> f32 conversion for kernels that store f16 and compute in f32 (STYLE 4.6): 16
// values per instruction on AVX-512 builds (vcvtph2ps / vcvtps2ph, round to nearest even), 8 on
// F16C-only builds, the scalar Eigen conversion for the tail and elsewhere. The bits equal Eigen's
// scalar conversion (same round to nearest even), except that a signalling f16 NaN widens to a
// quiet one (the instructions set the quiet bit; sign and payload are kept), in the tail too.
// bf16 and other types are not handled here (their kernels keep the scalar path).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/float16.h"
#include "ir/tensor.h"

namespace mcc::backends::cpu {

void f16_to_f32(const f16* src, float* dst, int64_t n);
void f32_to_f16(const float* src, f16* dst, int64_t n);
/// An f16 tensor's values as f32.
std::vector<float> f16_values(const ir::Tensor& t);

}  // namespace mcc::backends::cpu
