// register_nn(): conv, gemm/matmul, pooling, normalization and einsum kernels.
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/nn_register.h"

namespace mcc::backends::cpu {
void register_nn(KernelRegistry& r) {
  register_conv(r);
  register_conv_transpose(r);
  register_conv_integer(r);
  register_deform_conv(r);
  register_gemm(r);
  register_pool(r);
  register_norm(r);
  register_einsum(r);
  register_attention(r);
}
}  // namespace mcc::backends::cpu
