// register_cast(): Cast and CastLike (cast.cpp).
#include "backends/cpu/kernels/elementwise.h"

namespace mcc::backends::cpu {
void register_cast(KernelRegistry& r) { register_cast_ops(r); }
}  // namespace mcc::backends::cpu
