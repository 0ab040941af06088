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
// kept; what static GPTQ makes of its Hessians is (kept_codes: a weight's codes, bias shift and
// losses under a key of the model's content, the samples, the layer, its scales and GPTQ's
// options), so a later attempt with the same key skips the Hessian pass for that layer.
// Off by default; everything kept is dropped when reuse is turned off.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

/// The GPTQ result of one static int8 weight (quantize/static_gptq.h).
struct KeptCodes {
  std::string codes;          // packed int8 codes (QPoint::codes)
  std::vector<double> shift;  // exact bias shift per output channel (empty: none)
  nlohmann::ordered_json loss;
};

/// The codes kept under `key` while reuse is on.
std::optional<KeptCodes> kept_codes(const std::string& key);
/// Keeps `c` under `key` while reuse is on (nothing otherwise).
void keep_codes(const std::string& key, KeptCodes c);

}  // namespace mcc::transforms::quantize
