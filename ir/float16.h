// 16-bit float storage types. f16/bf16 are stored as 16 bits and computed in f32 (STYLE 4.6).
#pragma once
#include <Eigen/Core>

namespace mcc {
using f16 = Eigen::half;
using bf16 = Eigen::bfloat16;
}  // namespace mcc
