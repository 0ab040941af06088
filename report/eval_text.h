// What `mcc eval` prints on the terminal: the per-output table under the rules used, the top-1
// accuracy against labels, and the per-layer table with the suggested exclusion. The figures
// come from judge/ (eval_outputs.h, top1.h, per_layer.h); this file only lays them out.
#pragma once
#include <string>
#include <vector>

#include "judge/eval_outputs.h"
#include "judge/per_layer.h"
#include "judge/top1.h"

namespace mcc::report {

/// The rules line, one row per compared output (max abs/rel, mean abs, worst cosine and SNR,
/// top-1 agreement, pass/FAIL), row cosines where the rules use them, and the absolute
/// tolerance allclose applied where it scales with the reference.
void print_eval_outputs(const judge::EvalOutputs& outputs);

/// The token figures of causal-LM outputs (judge/sequence_figures.h): one line each with its
/// 95 % interval, threshold, verdict and the tokens it rests on; also what the check stage lists.
void print_sequence_figures(const nlohmann::ordered_json& figures);

/// Top-1 accuracy per class-score output; `reference` names what the reference is ("reference", "golden").
void print_top1(const std::vector<judge::Top1Row>& rows, const judge::Top1Limits& limits, const std::string& labels_path,
                const std::string& reference);

/// The per-layer table (the `top` worst, 0 = all), where the error is introduced, and the suggestion.
void print_per_layer(const judge::PerLayerReport& r, size_t top);

}  // namespace mcc::report
