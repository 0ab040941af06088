// register_cast(): Cast and CastLike (cast.cpp), BitCast (bitcast.cpp).
#include "backends/cpu/kernels/elementwise.h"

namespace mcc::backends::cpu {
void register_bitcast(KernelRegistry& r);  // bitcast.cpp

void register_cast(KernelRegistry& r) {
  register_cast_ops(r);
  register_bitcast(r);
}
}  // namespace mcc::backends::cpu
