// AWQ's clip search (quantize{mode=weight_only awq=true}, quantize/awq.h): after the scales, each
// block of a weight column may round better with its range narrowed. For block b (rows
// [b*B, (b+1)*B) of column n of W [K, N]), with lo = min(0, min w) and hi = max(0, max w) over the
// block, the weights are clamped to [lo*r, hi*r] for r = 1 - i/20, i = 0..10, rounded with the
// stage's block format, and the i with the least output error (w - Q(clamp(w)))^T G (w - Q(clamp(w)))
// wins, G = X_b^T X_b over the sampled calibration rows of that block's inputs (i = 0: no clip, on
// ties). The clamp is applied to the float weights, so the rounding that follows (RTN or GPTQ) sees
// the narrowed range; the steps are recorded (one byte per block and column) and replayed.
// Does not apply to weights stored [N, K] (Gemm with transB): weight-only quantizes MatMuls only.
#pragma once
#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "transforms/quantize/block_quant.h"

namespace mcc::transforms::quantize {

inline constexpr int kClipSteps = 10;  // r = 1 - i/20 for i = 0..kClipSteps

using ClipRows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The clip step of every block and column of W [K, N] (row-major), laid out [ceil(K / B), N], for
/// inputs X [rows, K].
std::vector<uint8_t> search_clip(const ClipRows& W, const ClipRows& X, const BlockFormat& f);

/// Clamps W [K, N] (row-major) in place to the recorded steps (blocks of `block_size` rows).
void apply_clip(float* W, int64_t K, int64_t N, const std::vector<uint8_t>& steps, int64_t block_size);

}  // namespace mcc::transforms::quantize
