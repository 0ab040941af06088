// The accuracy budget of `mcc quantize` (cli/cmd_quantize.cpp): which samples judge the result,
// the check stage's options (the figures themselves: check_figures.h), and the ladder of
// quantize configurations tried cheapest first while the budget is unmet. Applies to
// `mcc quantize` runs with calibration data; replay (--state) runs the recorded pipeline only.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mcc::judge {

/// What the budget flags of `mcc quantize` set (--eval, --holdout, --min-cosine, --min-top1,
/// --labels, --max-top1-drop, --no-check, --no-escalate).
struct BudgetOptions {
  std::string eval_dir, labels;
  std::optional<double> min_cosine, min_top1, max_top1_drop;
  std::optional<int64_t> holdout;  // calibration samples held back to judge on (default: a fifth, 1..32)
  bool no_check = false, no_escalate = false;
};

struct BudgetPlan {
  std::vector<nlohmann::ordered_json> attempts;  // quantize stage options, cheapest first
  nlohmann::ordered_json check;                  // check stage options; null: no check
  /// Tried next, once, when an attempt misses on causal-LM logits (perplexity ratio or token
  /// agreement): SmoothQuant over QDQ on the MatMul/Gemm inputs only (target=generic). One range
  /// per tensor on a decoder's residual stream and attention ops breaks it whatever the range
  /// method (SmolLM2-135M, ort layout: perplexity ratio 1628 minmax, 18 percentile; with
  /// SmoothQuant 0.5 and this layout 1.07). Null when static mode's ladder does not run or the
  /// user set smooth_quant, target or op_types.
  nlohmann::ordered_json language_model_step;
};

/// The check and the ladder for the quantize options the flags set (`stage`). Without --eval the
/// calibration folder's last samples are held back (the quantize stage gets the same holdout);
/// a folder of one sample leaves nothing to judge on: no check, and a warning says so.
BudgetPlan plan_budget(const BudgetOptions& b, const nlohmann::ordered_json& stage);

}  // namespace mcc::judge
