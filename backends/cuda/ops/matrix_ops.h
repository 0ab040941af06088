// Shared by the cuda backend's matrix family (ops/gemm.cpp, matmul.cpp, conv.cpp, fusion.cpp):
// the dtype check of f32/f16 gemm operands, the blas element type of a tensor, and the Gemm and
// Conv kernel factories with an activation epilogue (Activation::Kind::None when run alone, the
// matched activation when fusion.cpp absorbs the nodes after them).
#pragma once
#include <string>
#include <vector>

#include "backends/cuda/kernels/gemm_epilogue.h"
#include "backends/cuda/op_table.h"
#include "backends/kernel_shapes.h"

namespace mcc::backends::cuda {

/// The blas type of an f32 or f16 tensor.
::mcc::cuda::GemmType gemm_type(ir::DType dt);
/// Present inputs all f32 or all f16 (the same one); otherwise the reason.
std::string same_float_inputs(const ir::Node& n, std::span<const ir::DType> dtypes);

Kernel make_gemm_kernel(const ir::Node& n, ::mcc::cuda::Activation act);
Kernel make_conv_kernel(const ir::Node& n, ::mcc::cuda::Activation act);
/// The Conv NodeCheck: empty when the Conv kernel takes n, else the reason.
std::string conv_check(const ir::Node& n, std::span<const ir::DType> dtypes);

void register_gemm(OpTable& t);
void register_conv(OpTable& t);

}  // namespace mcc::backends::cuda
