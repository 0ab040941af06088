// The cpu backend's whole registry: every kernel family's registration, in one list.
#include "backends/cpu/kernels/kernels.h"

namespace mcc::backends::cpu {

void register_all(KernelRegistry& r) {
  register_elementwise(r);
  register_cast(r);
  register_nn(r);
  register_tensor_ops(r);
  register_reduce(r);
  register_control(r);
  register_misc(r);
}

}  // namespace mcc::backends::cpu
