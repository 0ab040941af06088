// The fp16 stage (mixed precision, float16 or bfloat16). See fp16/fp16.cpp.
#pragma once
#include <memory>

#include "transforms/pipeline/pass.h"

namespace mcc::transforms::fp16 {
std::unique_ptr<Pass> make_pass();
}  // namespace mcc::transforms::fp16
