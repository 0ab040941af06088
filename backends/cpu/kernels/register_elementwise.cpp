// register_elementwise(): unary math and activations, binary arithmetic/comparison/logic,
// variadic folds, Where and Clip (see the kernel files named below).
#include "backends/cpu/kernels/elementwise.h"

namespace mcc::backends::cpu {
void register_elementwise(KernelRegistry& r) {
  register_unary(r);       // unary.cpp
  register_binary(r);      // binary.cpp
  register_variadic(r);    // variadic.cpp
  register_where_clip(r);  // where_clip.cpp
}
}  // namespace mcc::backends::cpu
