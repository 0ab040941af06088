// register_nn(): conv, gemm/matmul, MatMulNBits (com.microsoft), pooling, normalization, einsum
// and AffineGrid kernels.
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/nn_register.h"

namespace mcc::backends::cpu {
void register_affine_grid(KernelRegistry& r);  // affine_grid.cpp
void register_matmul_nbits(KernelRegistry& r);  // matmul_nbits.cpp

void register_nn(KernelRegistry& r) {
  register_conv(r);
  register_conv_transpose(r);
  register_conv_integer(r);
  register_deform_conv(r);
  register_gemm(r);
  register_matmul_nbits(r);
  register_pool(r);
  register_norm(r);
  register_einsum(r);
  register_attention(r);
  register_affine_grid(r);
}
}  // namespace mcc::backends::cpu
