// The figures a causal-LM output is judged by (sequence_metrics.h), shared by `mcc eval` and the
// check stage so both report and decide them the same way:
//   perplexity_ratio  exp(mean(NLL - NLL_ref)) <= max_perplexity_ratio
//   token_agreement   top-1 next token equal to the reference's >= min_token_agreement
//   kl_mean           mean KL(reference || model) <= max_kl (judged only when asked for)
// each with its 95 % interval and a pass / fail / undecided verdict (interval.h), and the
// number of tokens and samples it rests on. Without a reference only the perplexity is reported.
#pragma once
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "judge/sequence_metrics.h"

namespace mcc::judge {

struct SequenceBudget {
  double max_perplexity_ratio = 1.3, min_token_agreement = 0.6;
  double max_kl = 0.25;
  /// Metrics judged: "perplexity", "token-agreement", "kl"; the others are reported.
  std::set<std::string> judged{"perplexity", "token-agreement"};
};

/// The budget of a precision class (judge::model_precision): fp32 1.001 / 0.99 / kl 1e-4,
/// fp16 1.01 / 0.95 / 0.01, bf16 1.05 / 0.9 / 0.05, int8 (and int4) 1.3 / 0.6 / 0.25.
/// Measured on SmolLM2-135M: good W8A8 (perplexity 1.04x) agrees on 0.85 of next tokens, good
/// mixed int4 (1.27x) on 0.69, W8A8 with per-tensor activations (1.78x, broken) on 0.58.
SequenceBudget default_sequence_budget(const std::string& profile);

/// [{output, metric, value, interval: [lo, hi], threshold, verdict, tokens, samples, ...}].
nlohmann::ordered_json sequence_figures(const std::string& output, const SequenceStats& s, const SequenceBudget& b);

/// Metric names of the judged causal-LM figures, as sequence_figures writes them.
inline constexpr const char* kPerplexityRatioMetric = "perplexity_ratio";
inline constexpr const char* kTokenAgreementMetric = "token_agreement";

/// Whether a check's figures (its "checks" array) judged causal-LM logits.
bool judged_language_model(const nlohmann::ordered_json& checks);

}  // namespace mcc::judge
