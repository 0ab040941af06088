// register_misc(): losses, detection, signal, linear algebra, text, training and random kernels.
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
void register_misc(KernelRegistry& r) {
  register_loss(r);
  register_detection(r);
  register_signal(r);
  register_linalg(r);
  register_text(r);
  register_training(r);
  register_random(r);
}
}  // namespace mcc::backends::cpu
