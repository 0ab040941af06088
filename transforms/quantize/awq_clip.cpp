// AWQ's per-block clip search and its application (see quantize/awq_clip.h).
#include "transforms/quantize/awq_clip.h"

#include <algorithm>
#include <cmath>

#include "ir/errors.h"

namespace mcc::transforms::quantize {

namespace {

/// [lo, hi] of one block column: min(0, min w) and max(0, max w).
std::pair<float, float> block_range(const float* w, int64_t rows, int64_t stride) {
  float lo = 0, hi = 0;
  for (int64_t k = 0; k < rows; ++k) {
    lo = std::min(lo, w[k * stride]);
    hi = std::max(hi, w[k * stride]);
  }
  return {lo, hi};
}

float ratio(int step) { return 1.0f - static_cast<float>(step) / 20.0f; }

}  // namespace

std::vector<uint8_t> search_clip(const ClipRows& W, const ClipRows& X, const BlockFormat& f) {
  const int64_t K = W.rows(), N = W.cols(), B = f.block_size, blocks = (K + B - 1) / B;
  std::vector<uint8_t> steps(static_cast<size_t>(blocks * N), 0);
  std::vector<float> clamped(static_cast<size_t>(B));
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t k0 = b * B, rows = std::min(B, K - k0);
    const ClipRows Xb = X.middleCols(k0, rows);
    const Eigen::MatrixXf G = Xb.transpose() * Xb;  // [rows, rows]
    Eigen::VectorXf best(N);
    for (int i = 0; i <= kClipSteps; ++i) {
      Eigen::MatrixXf D(rows, N);  // w - Q(clamp(w)) per column
      for (int64_t n = 0; n < N; ++n) {
        const float* w = W.data() + k0 * N + n;
        const auto [lo, hi] = block_range(w, rows, N);
        const float l = lo * ratio(i), h = hi * ratio(i);
        for (int64_t k = 0; k < rows; ++k) clamped[static_cast<size_t>(k)] = std::clamp(w[k * N], l, h);
        const BlockParams p = block_params(clamped.data(), rows, 1, f);
        for (int64_t k = 0; k < rows; ++k) {
          const float q = static_cast<float>(block_code(clamped[static_cast<size_t>(k)], p, f) - p.zero_point) * p.scale;
          D(k, n) = w[k * N] - q;
        }
      }
      const Eigen::VectorXf err = (D.array() * (G * D).array()).colwise().sum().transpose();
      for (int64_t n = 0; n < N; ++n)
        if (i == 0 || err(n) < best(n)) {
          best(n) = err(n);
          steps[static_cast<size_t>(b * N + n)] = static_cast<uint8_t>(i);
        }
    }
  }
  return steps;
}

void apply_clip(float* W, int64_t K, int64_t N, const std::vector<uint8_t>& steps, int64_t block_size) {
  const int64_t blocks = (K + block_size - 1) / block_size;
  if (static_cast<int64_t>(steps.size()) != blocks * N)
    throw ModelError("awq clip: " + std::to_string(steps.size()) + " steps for " + std::to_string(blocks * N) +
                     " blocks of the weight");
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t k0 = b * block_size, rows = std::min(block_size, K - k0);
    for (int64_t n = 0; n < N; ++n) {
      const int step = steps[static_cast<size_t>(b * N + n)];
      if (step > kClipSteps) throw ModelError("awq clip: a step above " + std::to_string(kClipSteps));
      if (step == 0) continue;
      float* w = W + k0 * N + n;
      const auto [lo, hi] = block_range(w, rows, N);
      const float l = lo * ratio(step), h = hi * ratio(step);
      for (int64_t k = 0; k < rows; ++k) w[k * N] = std::clamp(w[k * N], l, h);
    }
  }
}

}  // namespace mcc::transforms::quantize
