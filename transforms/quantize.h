// The quantize stage (INT8 static post-training quantization in QDQ form). See quantize_qdq.cpp.
#pragma once
#include <memory>

#include "transforms/pass.h"

namespace mcc::transforms {
std::unique_ptr<Pass> make_quantize_pass();
}  // namespace mcc::transforms
