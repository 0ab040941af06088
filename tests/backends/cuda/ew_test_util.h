// Helpers of the cuda elementwise, normalization and reduction/pool tests: seeded inputs of any
// dtype the kernels take, on top of cuda_test_util.h's check_on_cuda / check_declined.
#pragma once
#include <cmath>
#include <random>
#include <vector>

#include "backends/cuda/cuda_test_util.h"

namespace mcc::test::cuda_ew {

using cuda_test::check_declined;
using cuda_test::check_on_cuda;
using cuda_test::random_of;
using cuda_test::support_of;

/// Values uniform in [lo, hi) as dtype dt (f32, f16, i32, i64: ints are rounded), seeded.
inline ir::Tensor values_of(ir::DType dt, std::vector<int64_t> dims, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(ir::checked_numel(dims)));
  for (auto& x : v) x = d(rng);
  switch (dt) {
    case ir::DType::F16: return tensor_of<f16>(std::move(dims), v);
    case ir::DType::I32:
      for (auto& x : v) x = std::round(x);
      return tensor_of<int32_t>(std::move(dims), v);
    case ir::DType::I64:
      for (auto& x : v) x = std::round(x);
      return tensor_of<int64_t>(std::move(dims), v);
    case ir::DType::I8:
      for (auto& x : v) x = std::round(x);
      return tensor_of<int8_t>(std::move(dims), v);
    case ir::DType::U8:
      for (auto& x : v) x = std::round(std::fabs(x));
      return tensor_of<uint8_t>(std::move(dims), v);
    case ir::DType::Bool: {
      std::vector<bool> b;
      for (double x : v) b.push_back(x > (lo + hi) / 2);
      return tensor<bool>(std::move(dims), b);
    }
    default: return tensor_of<float>(std::move(dims), v);
  }
}

}  // namespace mcc::test::cuda_ew
