// Reuse of calibration statistics within one process: mcc quantize's escalation ladder tries
// several configurations of the same float model on the same samples (range methods, then mixed
// precision), and each used to run the model over every calibration sample again. While reuse is
// on, calibrate() keeps its last result under a key made of the model's content (ir::print_model:
// every graph's nodes and attributes, each initializer's bytes by checksum), the samples' digest
// and every option that changes what is collected, and hands it back when the same key comes
// again. With reuse on every calibration also collects histograms (results with them serve
// requests without: min/max and moments do not depend on them, and the histograms themselves do
// not depend on how the values were chunked), so the first configuration's pass serves the later
// ones whatever their method. Calibrations with a tap (GPTQ Hessians, SmoothQuant maxima) are not
// kept. Off by default; the kept result is dropped when reuse is turned off.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "transforms/quantize/calibration.h"

namespace mcc::transforms::quantize {

void set_calibration_reuse(bool on);
bool calibration_reuse();

/// Turns reuse on for a scope (the escalation ladder's attempts), off again when it ends.
class CalibrationReuse {
 public:
  explicit CalibrationReuse(bool on);
  ~CalibrationReuse();
  CalibrationReuse(const CalibrationReuse&) = delete;
  CalibrationReuse& operator=(const CalibrationReuse&) = delete;

 private:
  bool was_;
};

/// The key of a calibration: model content, watched tensors, samples digest, options.
std::string calibration_key(const ir::Model& model, const std::vector<std::string>& watch, const CalibrationConfig& cfg,
                            const std::string& samples_sha256);

/// The kept result for `key`, if it is the last one kept.
std::optional<CalibrationResult> kept_calibration(const std::string& key);
/// Keeps `r` under `key` (replacing the one kept before).
void keep_calibration(const std::string& key, const CalibrationResult& r);

}  // namespace mcc::transforms::quantize
