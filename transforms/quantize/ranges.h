// Activation ranges of the quantize stage: for each selected activation, whether it can be
// quantized (calibration saw it as float32) and its calibrated range under its settings; then the
// optional 16-bit widening (widen_below_db=D): an input whose estimated 8-bit SNR at its Conv/Gemm
// (quantize/tune.h) is below D dB becomes uint16/int16, a shared-scale group as a whole. Does not
// apply to weights and biases (quantize/points.h) or when nothing was calibrated.
#pragma once
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "transforms/quantize/calibration.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

/// Per activation of Selection::activations (same index).
struct ActivationRanges {
  std::vector<bool> ok;                          // quantized
  std::vector<std::pair<double, double>> range;  // calibrated range (valid where ok)
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();  // {tensor, reason}: left float
  nlohmann::ordered_json widened = nlohmann::ordered_json::array();  // {tensor, dtype, ...}: given 16 bits
};

/// The ranges of sel.activations from the calibration statistics; activations calibration never
/// saw as float32 are not ok and listed in `skipped`.
ActivationRanges activation_ranges(const Selection& sel, const CalibrationResult& cal, const Config& cfg);

/// 16-bit widening (cfg.widen_db > 0): changes the widened activations' settings in `sel`, lists
/// them in acts.widened and recomputes the 16-bit ranges. Returns whether any was widened (the
/// opset must then allow 16-bit activations).
bool widen_activations(Selection& sel, const CalibrationResult& cal, const Config& cfg, ActivationRanges& acts);

}  // namespace mcc::transforms::quantize
