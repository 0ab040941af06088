// Binary elementwise kernels of the cuda backend with numpy broadcasting: each input is addressed
// through a Shape8 over the output's (collapsed) dims with stride 0 on broadcast dims.
// Arithmetic (Add, Sub, Mul, Div, Pow, Max, Min, PRelu, Mod with the divisor's sign, Fmod with
// the dividend's): f32, f16 (computed in float), i32, i64 (wrap-around; Div truncates, x / 0 and
// x % 0 give 0 as the cpu does). Comparisons: same types, bool output.
// And/Or/Xor: bool. Mixed input types are not handled here (the host side declines them).
#pragma once
#include <cstdint>

#include "backends/cuda/kernels/elem_type.h"
#include "backends/cuda/runtime/shape8.h"

namespace mcc::cuda {

enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, Pow, Max, Min, PRelu, Mod, Fmod,
  Equal, Less, Greater, LessOrEqual, GreaterOrEqual,
  And, Or, Xor,
};

/// True for the comparisons (bool output).
bool binary_is_compare(BinaryOp op);
/// True for And/Or/Xor (bool inputs and output).
bool binary_is_logical(BinaryOp op);

/// y[i] = op(a[offset_a(i)], b[offset_b(i)]) for i in [0, n); a and b hold `type`, y holds
/// `type` (bool for comparisons). sa and sb share the output's dims.
void binary(BinaryOp op, ElemType type, const void* a, const Shape8& sa, const void* b, const Shape8& sb,
            void* y, int64_t n);

/// y[i] = y[i] / divisor (Mean's final division), f32/f16.
void divide_inplace(ElemType type, void* y, int64_t n, float divisor);

}  // namespace mcc::cuda
