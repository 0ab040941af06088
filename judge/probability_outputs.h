// Probability outputs: a model output a Sigmoid writes (a text detector's map, a detector's
// objectness) holds independent probabilities, and a sample where both models put every value of
// it below kNothingProbability says "nothing here" in both: it agrees. Its cosine and SNR would
// measure only the direction of values near 1e-5, which int8 rounding moves freely (PP-OCRv4's
// detector on a photo without text: maps below 1e-4, per-sample cosine 0.03-0.7 for an int8 model
// whose map thresholds to the same empty mask). The check, `mcc eval` and the quantize stage's
// sensitivity probe judge such samples as agreeing (cosine 1, SNR +inf) and count them; a sample
// where either model reaches the limit anywhere is compared as usual, so a spurious detection in
// an empty photo still fails. Outputs of other ops (logits, Softmax scores, boxes) are untouched.
#pragma once
#include <vector>

#include "backends/compare.h"
#include "ir/graph.h"
#include "judge/output_stats.h"

namespace mcc::judge {

/// 1 %: far below any decision threshold a detector applies (DB text maps 0.3, YOLO scores
/// 0.25+), and above the 1/255 step of an 8-bit [0, 1] value.
constexpr double kNothingProbability = 0.01;

/// Per output of `g`, in order: written by a Sigmoid, directly or through the ops of
/// passthrough_ops.h (a quantized model's output).
std::vector<bool> probability_outputs(const ir::Graph& g);

/// Both are float32 tensors of equal size whose every value lies in [0, kNothingProbability).
bool nothing_in_both(const ir::Tensor& got, const ir::Tensor& want);

/// Judges a sample as agreeing: its metrics get cosine 1 and SNR +inf (errors stay as measured),
/// and `stats` counts it among nothing_samples. Call before folding `m` into `stats`.
void count_as_agreeing(backends::TensorMetrics& m, OutputStats& stats);

}  // namespace mcc::judge
