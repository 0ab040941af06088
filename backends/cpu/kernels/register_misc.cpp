// register_misc(): losses, detection, signal, linear algebra, text, string, image decoding,
// training, random and ai.onnx.ml kernels.
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
void register_string_ops(KernelRegistry& r);  // string_ops.cpp
void register_ml(KernelRegistry& r);          // ml.cpp
void register_image_decoder(KernelRegistry& r);  // image_decoder.cpp

void register_misc(KernelRegistry& r) {
  register_loss(r);
  register_detection(r);
  register_signal(r);
  register_linalg(r);
  register_text(r);
  register_string_ops(r);
  register_training(r);
  register_random(r);
  register_ml(r);
  register_image_decoder(r);
}
}  // namespace mcc::backends::cpu
