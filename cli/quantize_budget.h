// The accuracy budget of `mcc quantize` (see cli/cmd_quantize.cpp): which samples judge the
// result, the check stage's options, the ladder of configurations tried cheapest first, and the
// run that climbs it. Applies to `mcc quantize` runs with calibration data; replay (--state) runs
// the recorded pipeline only.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cmd_convert.h"

namespace mcc::cli {

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

/// --eval, --holdout, --min-cosine, --min-top1, --labels, --max-top1-drop, --no-check, --no-escalate.
void add_budget_flags(CLI::App& sub, BudgetOptions& b);

/// The check and the ladder for the quantize options the flags set (`stage`). Without --eval the
/// calibration folder's last samples are held back (the quantize stage gets the same holdout);
/// a folder of one sample leaves nothing to judge on: no check, and a warning says so.
BudgetPlan plan_budget(const BudgetOptions& b, const nlohmann::ordered_json& stage);

/// Runs the pipelines in order until one meets its check; earlier misses go to the sidecar's
/// "escalation". The last miss is the run's failure (exit 1, no model, the report written).
int run_with_budget(ConvertOptions c, const std::vector<std::string>& pipelines);

}  // namespace mcc::cli
