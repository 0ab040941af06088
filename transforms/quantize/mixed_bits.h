// Mixed 4/8-bit weight-only quantization (quantize{mode=weight_only bits=4 ratio=R}, NNCF's
// `ratio`): at least a share R of the quantized MatMul weights' elements stay 4-bit and the
// weights whose 4-bit rounding costs most become 8-bit blocks of the same size and symmetry.
// Cost of a weight W [K, N] at 4 bits (its round-to-nearest blocks):
//   sum_k h_k * sum_n (W[k, n] - Q4(W)[k, n])^2
// the expected squared error its rounding adds to the layer's output, with h_k the mean square
// of input feature k over the calibration tokens (the Hessian diagonal, when algorithm=gptq has
// calibrated) or 1 without data (the weight's own squared rounding error). Weights are taken
// greedily, most costly first, while the 8-bit elements fit in (1 - R) of all; ties by name.
// Every choice and cost is recorded and replayed from the points (no data needed).
// Does not apply with bits=8 or R = 1 (every weight at `bits`).
#pragma once
#include <Eigen/Core>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/tensor.h"
#include "transforms/quantize/block_quant.h"

namespace mcc::transforms::quantize {

struct MixedBitsWeight {
  std::string name;
  const ir::Tensor* weight = nullptr;        // float32 [K, N]
  const Eigen::VectorXd* mean_square = nullptr;  // per input feature (K); null: data-free
};

struct MixedBitsChoice {
  std::set<std::string> eight_bit;
  nlohmann::ordered_json record;  // {ratio, criterion, four_bit_share, weights: [{weight, elements, cost, bits}]}
};

/// The weights to store at 8 bits so that at least `ratio` of the elements stay at f's 4 bits.
MixedBitsChoice choose_eight_bit(const std::vector<MixedBitsWeight>& weights, const BlockFormat& f4, double ratio);

}  // namespace mcc::transforms::quantize
