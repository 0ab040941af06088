// Registration entry points of the cpu kernel families; each lives in its own file under kernels/.
#pragma once
#include "backends/kernel_registry.h"

namespace mcc::backends::cpu {
void register_elementwise(KernelRegistry& r);  // elementwise.cpp, activations.cpp
void register_cast(KernelRegistry& r);         // cast.cpp
void register_nn(KernelRegistry& r);           // conv.cpp, gemm.cpp, pool.cpp, norm.cpp
void register_tensor_ops(KernelRegistry& r);   // shape_ops.cpp, gather_scatter.cpp, resize.cpp, reduce.cpp, softmax.cpp
void register_control(KernelRegistry& r);      // control_flow.cpp, sequence.cpp, rnn.cpp, quantize.cpp
}  // namespace mcc::backends::cpu
