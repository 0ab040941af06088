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
};

/// The check and the ladder for the quantize options the flags set (`stage`). Without --eval the
/// calibration folder's last samples are held back (the quantize stage gets the same holdout);
/// a folder of one sample leaves nothing to judge on: no check, and a warning says so.
BudgetPlan plan_budget(const BudgetOptions& b, const nlohmann::ordered_json& stage);

}  // namespace mcc::judge
