// The fp16 stage (mixed precision, float16 or bfloat16). See cast_fp16.cpp.
#pragma once
#include <memory>

#include "transforms/pass.h"

namespace mcc::transforms {
std::unique_ptr<Pass> make_fp16_pass();
}  // namespace mcc::transforms
