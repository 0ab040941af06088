// Biases in the quantize stage.
// Bias points: a Conv/ConvTranspose/Gemm bias becomes int32 with s_b[c] = float(s_x * s_w[c]),
//   q = round(B / s_b[c]). Overflow guard: when |q| would exceed 2^30 (headroom below 2^31 for the
//   accumulator), the weight scale of that channel (or of the tensor, per-tensor) is widened to
//   |B[c]| / (s_x * 2^30) so the bias fits, and the weight point's note records old and new scale.
//   This happens on nearly dead channels (tiny weights, large bias), where the wider weight scale
//   costs no accuracy; keeping the bias in float32 instead would stop runtimes from fusing the op.
//   Does not apply (the bias stays float32, listed with the reason) when the node's input is not
//   quantized or is 16-bit, or the bias is shared, a graph input or output, or of another length.
// Bias correction (bias_correction=true, quantize/tune.h): each Conv/Gemm bias becomes
//   B - sum (Wq - W) E[x] with per-channel input means streamed during calibration; the amounts
//   are recorded (record.bias_correction) and replayed without data. Does not apply to nodes
//   without a float32 bias of their own or without calibrated input means (listed with the reason).
#pragma once
#include <map>
#include <string>
#include <vector>
#include <cstddef>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/points.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

/// Appends the int32 point of candidate c's bias to pts (its weight point is
/// pts.points[weight_index], quantized along `axis`), widening that weight's scales where the
/// guard needs it; or lists the bias in pts.skipped with the reason. `ir3`: the model's IR version
/// is below 4 (initializers listed as graph inputs are constants).
void add_bias_point(const ir::Graph& g, bool ir3, const Candidate& c, size_t weight_index, int axis, Points& pts);

struct BiasCorrections {
  bool enabled = false;
  nlohmann::ordered_json corrected = nlohmann::ordered_json::array();  // {tensor, node, subtract}
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();    // {node, reason}
};

/// Exact output shifts by weight name, from the means of each layer's actual inputs (a conv's
/// patches, padding included) where they are known (quantize/static_gptq.h).
using ExactShifts = std::map<std::string, std::vector<double>>;

/// The float32 amount to subtract from each quantized node's bias (quantize/tune.h), or the exact
/// shift of `exact` for a weight it holds.
BiasCorrections correct_biases(const ir::Graph& g, const Selection& sel, const Points& pts, const CalibrationResult& cal,
                               const ExactShifts& exact = {});

/// B[c] = float(B[c] - d[c]) for each recorded correction (run and replay alike). ModelError when
/// an entry names no float32 constant of the model or has another length.
void apply_bias_corrections(ir::Graph& g, const nlohmann::ordered_json& corrected);

}  // namespace mcc::transforms::quantize
