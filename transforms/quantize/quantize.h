// The quantize stage (INT8 static post-training quantization in QDQ form). See quantize/quantize.cpp.
#pragma once
#include <memory>

#include "transforms/pipeline/pass.h"

namespace mcc::transforms::quantize {
std::unique_ptr<Pass> make_pass();
}  // namespace mcc::transforms::quantize
