// Per-file registration functions of the nn kernel family (called from register_nn.cpp).
#pragma once
#include "backends/kernel_registry.h"

namespace mcc::backends::cpu {
void register_conv(KernelRegistry& r);            // conv.cpp
void register_conv_transpose(KernelRegistry& r);  // conv_transpose.cpp
void register_conv_integer(KernelRegistry& r);    // conv_integer.cpp
void register_deform_conv(KernelRegistry& r);     // deform_conv.cpp
void register_gemm(KernelRegistry& r);            // gemm.cpp
void register_pool(KernelRegistry& r);            // pool.cpp
void register_norm(KernelRegistry& r);            // norm.cpp
void register_einsum(KernelRegistry& r);          // einsum.cpp
void register_attention(KernelRegistry& r);       // attention.cpp
}  // namespace mcc::backends::cpu
