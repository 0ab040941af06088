// register_reduce(): the cpu kernels of this family (filled in by the family's kernel files).
#include "backends/cpu/kernels/kernels.h"

namespace mcc::backends::cpu {
void register_reduce(KernelRegistry& r) { (void)r; }
}  // namespace mcc::backends::cpu
