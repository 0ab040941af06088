// The measured-sensitivity step of the quantize stage (opt-in: method=auto, mixed_target,
// keep_float_top): builds the candidates for quantize/mixed.h's search from the selection and the
// calibration statistics, runs it on the first sensitivity_samples calibration samples, and adopts
// its choice: each activation's range method, and the activations left out of 8 bits, kept float
// or, with mixed_fallback=16bit, given uint16/int16 with their minmax ranges (opset raised to 21).
// Does not apply without calibration data.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/ranges.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

struct Measured {
  nlohmann::ordered_json record = nullptr;  // record.mixed (null: not measured)
  int64_t kept_float = 0;                   // activations the search kept float
};

/// Runs the search and adopts its choice into sel (methods, 16-bit settings), acts (ranges, ok,
/// skipped, widened) and plan (the opset, when 16-bit fallbacks remain).
Measured measure_sensitivity(const ir::Model& model, const std::string& calib_dir, int threads, Selection& sel,
                             const CalibrationResult& cal, const Config& cfg, ActivationRanges& acts, Plan& plan);

}  // namespace mcc::transforms::quantize
