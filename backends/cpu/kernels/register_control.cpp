// register_control(): control flow (If, Loop, Scan), sequences, optionals, recurrent layers and
// linear quantization.
#include "backends/cpu/kernels/control_kernels.h"
#include "backends/cpu/kernels/kernels.h"

namespace mcc::backends::cpu {

void register_control(KernelRegistry& r) {
  register_control_flow(r);
  register_sequence(r);
  register_optional(r);
  register_rnn(r);
  register_quantize(r);
}

}  // namespace mcc::backends::cpu
