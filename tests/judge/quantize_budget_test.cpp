// The ladder of `mcc quantize`: the configurations tried cheapest first, and the causal-LM step
// (SmoothQuant over MatMul/Gemm-input QDQ) offered only where the user left its settings alone.
#include <doctest/doctest.h>

#include "judge/quantize_budget.h"
#include "judge/sequence_figures.h"
#include "support/paths.h"

using namespace mcc;

namespace {
nlohmann::ordered_json static_stage() {
  return {{"calib", (test::source_dir() / "golden" / "mnist" / "calib").string()}};
}
}  // namespace

TEST_CASE("quantize budget: the static ladder and its causal-LM step") {
  const judge::BudgetPlan plan = judge::plan_budget({}, static_stage());
  REQUIRE(plan.attempts.size() == 6);
  CHECK(plan.attempts[0].value("method", "") == "");
  CHECK(plan.attempts[1].value("method", "") == "mse");
  // The fallback's first target is the budget itself (fewest float layers), then a margin above.
  CHECK(plan.attempts[4].value("mixed_target", "") == "0.99");
  CHECK(plan.attempts[5].value("mixed_target", "") == "0.995");
  judge::BudgetOptions near_one;
  near_one.min_cosine = 0.99995;
  const judge::BudgetPlan one = judge::plan_budget(near_one, static_stage());
  REQUIRE(one.attempts.size() == 5);
  CHECK(one.attempts[4].value("mixed_target", "") == "0.9999");
  REQUIRE_FALSE(plan.language_model_step.is_null());
  CHECK(plan.language_model_step.value("smooth_quant", "") == "0.5");
  CHECK(plan.language_model_step.value("target", "") == "generic");
  CHECK(plan.language_model_step.value("holdout", "") == plan.attempts[0].value("holdout", "?"));
  CHECK_FALSE(plan.language_model_step.contains("method"));

  // Settings the user chose are not overridden: no causal-LM step.
  for (const char* key : {"smooth_quant", "target", "op_types"}) {
    CAPTURE(key);
    nlohmann::ordered_json stage = static_stage();
    stage[key] = std::string(key) == "smooth_quant" ? "0.8" : std::string(key) == "target" ? "ort" : "MatMul";
    CHECK(judge::plan_budget({}, stage).language_model_step.is_null());
  }
  judge::BudgetOptions strict;
  strict.no_escalate = true;
  CHECK(judge::plan_budget(strict, static_stage()).language_model_step.is_null());
  nlohmann::ordered_json dynamic = static_stage();
  dynamic["mode"] = "dynamic";
  CHECK(judge::plan_budget({}, dynamic).language_model_step.is_null());
}

TEST_CASE("quantize budget: weight-only 4-bit escalates to AWQ scales where calibration data is given") {
  nlohmann::ordered_json wo = static_stage();
  wo["mode"] = "weight_only";
  const judge::BudgetPlan plan = judge::plan_budget({}, wo);
  REQUIRE(plan.attempts.size() == 2);
  CHECK_FALSE(plan.attempts[0].contains("awq"));
  CHECK(plan.attempts[1].value("awq", "") == "true");
  CHECK(plan.attempts[1].value("holdout", "") == plan.attempts[0].value("holdout", "?"));
  CHECK(plan.language_model_step.is_null());
  // Not when the user chose awq or 8 bits, or without calibration data.
  for (const char* key : {"awq", "bits"}) {
    CAPTURE(key);
    nlohmann::ordered_json stage = wo;
    stage[key] = std::string(key) == "awq" ? "false" : "8";
    CHECK(judge::plan_budget({}, stage).attempts.size() == 1);
  }
  nlohmann::ordered_json no_data = {{"mode", "weight_only"}};
  judge::BudgetOptions eval;
  eval.eval_dir = static_stage()["calib"].get<std::string>();
  CHECK(judge::plan_budget(eval, no_data).attempts.size() == 1);
}

TEST_CASE("quantize budget: a miss on causal-LM logits is told from other misses by its figures") {
  const nlohmann::ordered_json lm = nlohmann::ordered_json::parse(
      R"([{"output": "logits", "metric": "perplexity_ratio", "verdict": "fail"},
          {"output": "logits", "metric": "kl_mean", "verdict": "reported"}])");
  const nlohmann::ordered_json agreement = nlohmann::ordered_json::parse(R"([{"metric": "token_agreement"}])");
  const nlohmann::ordered_json image = nlohmann::ordered_json::parse(
      R"([{"output": "output", "metric": "cosine_mean", "verdict": "fail"}, {"metric": "top1_agreement"}])");
  CHECK(judge::judged_language_model(lm));
  CHECK(judge::judged_language_model(agreement));
  CHECK_FALSE(judge::judged_language_model(image));
  CHECK_FALSE(judge::judged_language_model(nlohmann::ordered_json::array()));
}
