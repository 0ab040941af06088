// Unary elementwise kernels of the cuda backend: math and activations, one thread per element.
// Float ops take f32 and f16 (computed in float); Neg, Abs, Sign and Relu also take i32 and i64
// (two's-complement wrap-around); Not takes bool. Formulas follow the cpu kernels.
#pragma once
#include <cstdint>

#include "backends/cuda/kernels/elem_type.h"

namespace mcc::cuda {

enum class UnaryOp : uint8_t {
  Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Neg, Abs, Reciprocal, Floor, Ceil, Round, Erf, Sin, Cos,
  Softplus, Softsign, Elu, Celu, LeakyRelu, ThresholdedRelu, HardSigmoid, HardSwish, GeluErf,
  GeluTanh, Mish, Selu, Sign, Not, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Swish,
};

/// True when `op` has an integer (i32/i64) kernel.
bool unary_has_int(UnaryOp op);

/// y[i] = op(x[i]) for i in [0, n); x and y hold `type`. alpha/beta are the op's attributes
/// (LeakyRelu/Elu/Celu/ThresholdedRelu/Swish alpha; HardSigmoid alpha, beta; Selu alpha, gamma=beta).
void unary(UnaryOp op, ElemType type, const void* x, void* y, int64_t n, float alpha, float beta);

}  // namespace mcc::cuda
