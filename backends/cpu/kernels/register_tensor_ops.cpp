// register_tensor_ops(): shape/constant ops, layout ops, slicing/padding and gather/scatter.
#include "backends/cpu/kernels/kernels.h"

namespace mcc::backends::cpu {
void register_shape_ops(KernelRegistry& r);               // shape_ops.cpp
void register_transpose_concat_split(KernelRegistry& r);  // transpose_concat_split.cpp
void register_slice_pad(KernelRegistry& r);               // slice_pad.cpp
void register_gather_scatter(KernelRegistry& r);          // gather_scatter.cpp

void register_tensor_ops(KernelRegistry& r) {
  register_shape_ops(r);
  register_transpose_concat_split(r);
  register_slice_pad(r);
  register_gather_scatter(r);
}
}  // namespace mcc::backends::cpu
