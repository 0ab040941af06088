// Per-channel activation scales for the inputs of depthwise convolutions.
//
// A depthwise Conv (group > 1, weight [C_out, 1, kh, kw]) computes each output channel from one
// input channel, so its input can carry one scale per channel (QuantizeLinear/DequantizeLinear
// with axis=1) at no loss of integer arithmetic: output channel o rescales by s_x[o / m] * s_w[o]
// (m = C_out / group). Per-tensor scales are what hurt there: after BatchNormalization folding and
// SiLU the channels of such an input span very different ranges (YOLOX-nano's first depthwise
// input: channel maxima from 0.3 to 101, median 13, RMS 3.1), and one 8-bit step of 0.4 for all
// of them drowns the small channels. Each channel's range comes from its own calibration
// statistics by the activation's range method (minmax, percentile, entropy or mse, per channel).
// Only where it pays: when the per-channel steps cut the expected noise power (step^2 / 12) by 3 dB
// or more against one step for the tensor; channels of like ranges (ReLU6 outputs: MobileNetV2)
// keep one scale, and with it their int32 bias.
// Applies when the quantize stage's depthwise_per_channel option is on and every quantized reader
// of the activation is such a Conv reading it as its data input; not to shared-scale groups, not
// to activations calibration saw with a varying channel count. The depthwise Conv's bias then
// stays float32 (its scale would differ per input channel; quantize/bias.cpp).
#pragma once
#include "ir/graph.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

/// Marks the activations of `sel` that get per-channel scales (ActivationInfo::per_channel).
void mark_depthwise_inputs(Selection& sel);

/// Fills the marked activations' channel_ranges from calibration's per-channel statistics with
/// each activation's range method; an activation without them goes back to one scale.
void fill_channel_ranges(Selection& sel, const CalibrationResult& cal, const Config& cfg);

}  // namespace mcc::transforms::quantize
