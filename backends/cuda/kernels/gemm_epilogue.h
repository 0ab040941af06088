// Element-wise passes around the cuda backend's gemm calls (Gemm, MatMul, Conv): writing beta * C
// broadcast into an output before a gemm accumulates onto it, and the bias + activation epilogue
// of Conv and of fused Conv/Gemm + activation chains. f32 and f16 storage, f32 arithmetic.
#pragma once
#include <cstdint>

#include "backends/cuda/runtime/blas.h"

namespace mcc::cuda {

/// An activation applied to each output value after the bias.
struct Activation {
  enum class Kind { None, Relu, Clip, Sigmoid, SiLU, LeakyRelu, HardSigmoid, HardSwish };
  Kind kind = Kind::None;
  float alpha = 0.f, beta = 0.f;  // Clip: [alpha, beta]; LeakyRelu: alpha; HardSigmoid: alpha, beta
};

/// y (outer x channels x inner, contiguous) := act(y + bias[channel]); bias may be null.
void bias_activation(GemmType type, void* y, int64_t outer, int64_t channels, int64_t inner,
                     const void* bias, const Activation& act);

/// y (rows x cols, contiguous) := beta * c[r * c_row_stride + j * c_col_stride] (strides in
/// elements; 0 broadcasts).
void write_scaled_broadcast(GemmType type, void* y, int64_t rows, int64_t cols, const void* c,
                            int64_t c_row_stride, int64_t c_col_stride, float beta);

}  // namespace mcc::cuda
