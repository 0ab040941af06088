// register_control(): the cpu kernels of this family (filled in by the family's kernel files).
#include "backends/cpu/kernels/kernels.h"

namespace mcc::backends::cpu {
void register_control(KernelRegistry& r) { (void)r; }
}  // namespace mcc::backends::cpu
