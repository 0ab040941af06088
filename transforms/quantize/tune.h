// Accuracy aids of the quantize stage that use calibration statistics beyond activation ranges
// (see quantize/tune.cpp): bias correction and the 8-bit sensitivity estimate that picks
// activations for 16 bits.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/policy.h"

namespace mcc::transforms::quantize {

/// Expected output shift per output channel of Conv/Gemm `n` when its float weight is replaced by
/// the dequantized weight of point `wp`: shift[o] = sum_{i,k} (Wq - W)[o,i,k] * E[x_i], with
/// E[x_i] the calibrated per-channel mean of the node's input (borders ignored). nullopt, with
/// `why` set, when the node does not fit (ConvTranspose, MatMul, channel counts differ).
std::optional<std::vector<double>> bias_shift(const ir::Node& n, const NodeSlots& slots, const QPoint& wp,
                                              const ChannelMoments& x, std::string& why);

/// Estimated SNR (dB) of the output of Conv/Gemm `n` when its input is quantized with step
/// `act_scale` (uniform noise step^2/12 per element) and everything else is exact:
///   SNR_o = sum_{i,k} W[o,i,k]^2 E[x_i^2] / (step^2/12 * sum_{i,k} W[o,i,k]^2),
/// averaged over output channels as noise-to-signal ratios. nullopt when it does not fit.
std::optional<double> estimated_snr_db(const ir::Node& n, const NodeSlots& slots, const ChannelMoments& x,
                                       float act_scale);

}  // namespace mcc::transforms::quantize
