// Registration entry points of the cpu kernel families; each lives in its own file under kernels/.
#pragma once
#include "backends/kernel_registry.h"

namespace mcc::backends::cpu {
void register_elementwise(KernelRegistry& r);  // elementwise.cpp, activations.cpp
void register_cast(KernelRegistry& r);         // cast.cpp
void register_nn(KernelRegistry& r);           // conv.cpp, gemm.cpp, pool.cpp, norm.cpp
void register_tensor_ops(KernelRegistry& r);   // shape, indexing, gather/scatter, pad, tile ops
void register_reduce(KernelRegistry& r);       // reductions, softmax family, arg/top-k, cumsum, resize
void register_control(KernelRegistry& r);      // control flow, sequences, optionals, rnn, quantize
void register_misc(KernelRegistry& r);         // losses, detection, signal, string and training ops
/// Every family above: the cpu backend's registry. A new family is added here, once, and the
/// backend and the op-classification test (tests/transforms/op_classification_test.cpp) see it.
void register_all(KernelRegistry& r);
}  // namespace mcc::backends::cpu
