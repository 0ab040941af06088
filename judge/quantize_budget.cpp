// The accuracy budget of `mcc quantize`: the check and the ladder (see quantize_budget.h).
//
// Ladder (each step only when the user left that setting at its default, and only while the
// budget is unmet): 1. the given configuration (minmax ranges by default: about one pass over the
// data); 2. method=mse and 3. method=percentile (one pass with histograms each; outliers
// clipped where that lowers the expected error, or beyond the 99.99th percentile); 4. method=auto
// (per activation, the best measured of minmax/percentile/mse: one model run per activation,
// method and sensitivity sample); 5. mixed_target = min cosine, then 6. min(0.9999, min cosine +
// 0.005) (the activations with the largest measured 8-bit cost stay float until the calibration
// samples reach it; the first keeps the fewest float, the second leaves a margin). YOLOX-nano (20
// COCO photos, 4 held back, target ort) stops at step 5 in about 2.5 min.
// mode=weight_only with 4 bits and --calib: 1. the given configuration; 2. awq=true (AWQ scales,
// one calibration pass and a search per MatMul input).
#include "judge/quantize_budget.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ir/errors.h"
#include "ir/labels.h"
#include "ir/sample_data.h"

namespace mcc::judge {
namespace {

/// An option value in the pipeline's canonical form: the shortest text that reads back as `v`.
std::string text(double v) {
  char b[32];
  const auto r = std::to_chars(b, b + sizeof b, v);
  return std::string(b, r.ptr);
}

}  // namespace


BudgetPlan plan_budget(const BudgetOptions& b, const nlohmann::ordered_json& stage) {
  BudgetPlan plan;
  nlohmann::ordered_json base = stage;
  if (b.no_check) {
    if (!b.eval_dir.empty() || b.min_cosine || b.min_top1 || !b.labels.empty() || b.max_top1_drop || b.holdout)
      throw UsageError("mcc quantize: --no-check contradicts the budget flags given");
    plan.attempts.push_back(base);
    return plan;
  }
  if (b.max_top1_drop && b.labels.empty()) throw UsageError("mcc quantize: --max-top1-drop needs --labels FILE");
  nlohmann::ordered_json check = nlohmann::ordered_json::object();
  if (!b.eval_dir.empty()) {
    if (b.holdout) throw UsageError("mcc quantize: --holdout holds back calibration samples; with --eval DIR it is not used");
    try {
      ir::list_sample_dirs(b.eval_dir);  // a missing or empty folder fails before any work
    } catch (Error& e) {
      e.add_context("--eval");
      throw;
    }
    check["data"] = b.eval_dir;
  } else if (stage.value("calib", "").empty()) {
    // No calibration data (a run-time quantized mode) and no --eval: nothing to judge on.
    spdlog::warn("quantize: the self-check does not run: no --calib or --eval DIR to judge on");
    if (b.min_cosine || b.min_top1 || b.max_top1_drop || !b.labels.empty())
      throw UsageError("mcc quantize: a budget needs samples to judge on: give --eval DIR");
    plan.attempts.push_back(base);
    return plan;
  } else {
    const std::string calib = stage.value("calib", "");
    const size_t n = ir::list_sample_dirs(calib).size();
    const int64_t k = b.holdout ? *b.holdout : std::clamp<int64_t>(std::llround(n / 5.0), 1, 32);
    if (n < 2 || k == 0) {
      spdlog::warn("quantize: the self-check does not run: {} leaves no calibration sample to hold back; give --eval DIR",
                   n < 2 ? "a single sample" : "--holdout 0");
      if (b.min_cosine || b.min_top1 || b.max_top1_drop)
        throw UsageError("mcc quantize: a budget needs samples to judge on: give --eval DIR or more calibration samples");
      plan.attempts.push_back(base);
      return plan;
    }
    base["holdout"] = std::to_string(k);
    check["data"] = calib;
    check["holdout"] = std::to_string(k);
  }
  if (b.min_cosine) check["min_cosine"] = check["class_min_cosine"] = text(*b.min_cosine);
  if (b.min_top1) check["min_top1"] = text(*b.min_top1);
  if (!b.labels.empty()) {
    try {
      ir::read_labels(b.labels);  // an unreadable labels file fails before any work
    } catch (Error& e) {
      e.add_context("--labels");
      throw;
    }
    check["labels"] = b.labels;
  }
  if (b.max_top1_drop) check["max_top1_drop"] = text(*b.max_top1_drop);
  plan.check = check;

  plan.attempts.push_back(base);
  if (b.no_escalate) return plan;
  const std::string mode = stage.value("mode", "static");
  // Weight-only 4-bit: activation-aware scales (awq=true) next, where calibration data is at hand.
  if (mode == "weight_only") {
    if (!stage.value("calib", "").empty() && !stage.contains("awq") && stage.value("bits", "4") == "4") {
      nlohmann::ordered_json step = base;
      step["awq"] = "true";
      plan.attempts.push_back(step);
    }
    return plan;
  }
  // The rest of the ladder changes calibration settings: only static quantization has them.
  if (mode != "static") return plan;
  if (!stage.contains("smooth_quant") && !stage.contains("target") && !stage.contains("op_types")) {
    plan.language_model_step = base;
    plan.language_model_step["smooth_quant"] = "0.5";
    plan.language_model_step["target"] = "generic";
  }
  nlohmann::ordered_json step = base;
  if (!stage.contains("method")) {
    for (const char* method : {"mse", "percentile", "auto"}) {
      step["method"] = method;
      plan.attempts.push_back(step);
    }
  }
  if (!stage.contains("mixed_target") && !stage.contains("keep_float_top")) {
    // First the budget itself on the calibration samples (the fewest float activations, so the
    // fewest float layers where the model runs), then a margin above it.
    const double bar = std::min(0.9999, b.min_cosine.value_or(0.99));
    const double margin = std::min(0.9999, bar + 0.005);
    step["mixed_target"] = text(bar);
    plan.attempts.push_back(step);
    if (margin > bar) {
      step["mixed_target"] = text(margin);
      plan.attempts.push_back(step);
    }
  }
  return plan;
}


}  // namespace mcc::judge
