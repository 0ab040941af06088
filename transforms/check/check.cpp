// check: the accuracy budget of a pipeline, measured, recorded and enforced.
//
// Runs the model as the previous stages left it and the pipeline's input model (read again from
// its file; it is never modified) on the samples of `data` (judge/agreement.h) and judges each
// float output against the budget (judge/check_figures.h):
//   class scores ([C] / [N, C] floats): top-1 agreement with the input model >= min_top1;
//   other float outputs: mean cosine over the samples >= min_cosine (the worst sample is reported);
//   class scores also by mean cosine >= class_min_cosine when that is > 0;
//   causal-LM logits (judge/sequence_metrics.h): perplexity ratio <= max_perplexity_ratio and
//   top-1 next-token agreement >= min_token_agreement over all tokens, KL reported; outputs shaped
//   like a padded sample's attention_mask are compared on their unmasked positions;
//   with labels=FILE (one integer per sample, in sample order): both models' top-1 accuracy on the
//   first class-score output, and the drop in points <= max_top1_drop when that is >= 0.
// Each figure has its 95 % interval; one whose estimate meets the budget while the interval
// reaches past it is undecided (judge/interval.h): the model is written, the verdict recorded
// as "undecided" and a warning says what more data would settle it.
// holdout=K uses only the last K samples of `data`: the ones a quantize stage with the same
// holdout kept out of its calibration, so the figure is never measured on calibration data.
// The record holds every figure (metric, output, value, threshold, verdict, samples), the data's
// hash and the overall verdict; the sidecar lists them under "checks". A missed budget throws
// CheckFailed (exit 1) carrying the record; nothing is written.
// Replay (--state): the recorded verdict is kept as it is, and nothing is run: replay needs no data.
// Does not apply when: the pipeline has no input file (an in-memory pipeline): UsageError.
// Integer, bool and sequence outputs are listed as not measured.
#include "transforms/check/check.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "ir/free_memory.h"
#include "ir/labels.h"
#include "ir/onnx_io.h"
#include "ir/sample_data.h"
#include "judge/agreement.h"
#include "judge/check_figures.h"
#include "judge/verdict.h"
#include "transforms/quantize/calibration.h"

namespace fs = std::filesystem;

namespace mcc::transforms::check {
namespace {

using json = nlohmann::ordered_json;

std::string resolve(const std::string& path, const PassContext& ctx) {
  if (path.empty() || fs::path(path).is_absolute() || ctx.base_dir.empty()) return path;
  return (fs::path(ctx.base_dir) / path).lexically_normal().string();
}

/// A state's check record must have the shape this stage writes; ModelError (exit 3) otherwise.
void check_record_shape(const json& rec) {
  const auto bad = [](const std::string& what) { return ModelError("check: the state's record is invalid: " + what); };
  if (!rec.is_object() || !rec.contains("verdict") || !rec["verdict"].is_string()) throw bad("no verdict");
  if (!rec.contains("data") || !rec["data"].is_object()) throw bad("no data object");
  if (!rec.contains("checks") || !rec["checks"].is_array()) throw bad("no checks list");
  for (const auto& c : rec["checks"]) {
    if (!c.is_object() || !c.contains("output") || !c["output"].is_string() || !c.contains("metric") ||
        !c["metric"].is_string() || !c.contains("verdict") || !c["verdict"].is_string())
      throw bad("a check without output, metric and verdict");
    for (const char* k : {"value", "threshold", "samples", "tokens", "worst_sample_cosine", "top1", "reference_top1",
                          "samples_nothing_in_both"})
      if (c.contains(k) && !c[k].is_number() && !c[k].is_null()) throw bad(std::string("'") + k + "' is not a number");
    if (c.contains("interval") && (!c["interval"].is_array() || c["interval"].size() != 2 ||
                                   !(c["interval"][0].is_number() || c["interval"][0].is_null()) ||
                                   !(c["interval"][1].is_number() || c["interval"][1].is_null())))
      throw bad("'interval' is not a pair of numbers");
  }
}

class CheckPass : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo kInfo{
        "check",
        "Accuracy budget: compare with the pipeline's input model on held-back samples; fail the run when unmet",
        {
            {"data", OptionType::String, "", "Input samples (relative to the pipeline file's folder, or the cwd)", {}},
            {"holdout", OptionType::Int, "0",
             "Judge only the last K samples of data (those a quantize stage with the same holdout did not calibrate "
             "on); 0: all", {}},
            {"samples", OptionType::Int, "0", "Judge at most this many samples (0: all)", {}},
            {"min_cosine", OptionType::Float, "0.99", "Least mean output cosine, for float outputs that are not class scores", {}},
            {"class_min_cosine", OptionType::Float, "0", "Least mean output cosine for class-score outputs too (0: off)", {}},
            {"min_top1", OptionType::Float, "0.99", "Least top-1 agreement (0..1), for class-score outputs", {}},
            {"labels", OptionType::String, "", "Labels, one integer per sample (.npy or text); adds top-1 accuracy", {}},
            {"max_top1_drop", OptionType::Float, "-1",
             "With labels: most top-1 accuracy drop in points against the input model (negative: report only)", {}},
            {"max_perplexity_ratio", OptionType::Float, "-1",
             "Causal-LM logits: most perplexity relative to the input model, over the samples' tokens (-1: by the "
             "model's precision: fp16 1.01, bf16 1.05, int8/int4 1.3)", {}},
            {"min_token_agreement", OptionType::Float, "-1",
             "Causal-LM logits: least share of positions whose top-1 next token equals the input model's (-1: by "
             "the model's precision: fp16 0.95, bf16 0.9, int8/int4 0.6)", {}},
        }};
    return kInfo;
  }

  PassResult run(ir::Model& model, PassContext& ctx) override {
    PassResult res;
    if (ctx.replay && !ctx.replay->empty()) {
      // The recorded verdict, and the stats the recording run reported (a replay's state matches).
      check_record_shape(*ctx.replay);
      res.record = *ctx.replay;
      const auto& data = res.record.value("data", json::object());
      res.stats["samples"] = data.is_object() ? data.value("samples", int64_t{0}) : int64_t{0};
      res.stats["verdict"] = res.record.value("verdict", "");
      return res;
    }
    const Options& o = ctx.options;
    // Token budgets follow what the pipeline made (an fp16 LLM is held to fp16's), unless set.
    judge::Budget budget{o.get_float("min_cosine"), o.get_float("class_min_cosine"), o.get_float("min_top1"),
                         o.get_float("max_top1_drop"), judge::default_sequence_budget(judge::model_precision(model))};
    const double max_ratio = o.get_float("max_perplexity_ratio"), min_agree = o.get_float("min_token_agreement");
    if (max_ratio != -1 && !(max_ratio > 0)) throw UsageError("check: max_perplexity_ratio must be > 0 (or -1)");
    if (min_agree != -1 && !(min_agree >= 0 && min_agree <= 1))
      throw UsageError("check: min_token_agreement is a fraction in [0, 1] (or -1)");
    if (max_ratio != -1) budget.sequence.max_perplexity_ratio = max_ratio;
    if (min_agree != -1) budget.sequence.min_token_agreement = min_agree;
    if (budget.min_top1 < 0 || budget.min_top1 > 1) throw UsageError("check: min_top1 is a fraction in [0, 1]");
    if (o.get_int("holdout") < 0 || o.get_int("samples") < 0) throw UsageError("check: holdout and samples are >= 0");
    const std::string data = resolve(o.get_string("data"), ctx);
    if (data.empty()) throw UsageError("check: set data=DIR (the samples to judge on)");
    if (ctx.input_path.empty()) throw UsageError("check: needs the pipeline's input model file to compare with");
    const auto dirs = quantize::held_back_sample_dirs(data, static_cast<size_t>(o.get_int("holdout")),
                                                      static_cast<size_t>(o.get_int("samples")));
    judge::AgreementInput in;
    in.sample_dirs = dirs;
    in.threads = ctx.threads;
    const std::string labels_path = resolve(o.get_string("labels"), ctx);
    if (!labels_path.empty()) {
      in.labels = ir::read_labels(labels_path);
      const size_t all = ir::list_sample_dirs(data).size();
      if (in.labels.size() != all)
        throw ModelError(labels_path + ": " + std::to_string(in.labels.size()) + " labels for " + std::to_string(all) +
                         " samples in '" + data + "'");
      const int64_t holdout = o.get_int("holdout");
      const size_t first = holdout > 0 ? all - static_cast<size_t>(holdout) : 0;  // labels[first] is dirs[0]'s
      in.labels = std::vector<int64_t>(in.labels.begin() + static_cast<std::ptrdiff_t>(first),
                                       in.labels.begin() + static_cast<std::ptrdiff_t>(first + dirs.size()));
    }
    ir::release_free_memory();  // what the stages before dropped, before the reference is loaded
    const auto outs = judge::measure_agreement(model, ir::load_model(ctx.input_path), in);
    json checks = judge::budget_figures(outs, budget);
    const std::string failed = judge::missed_figures(checks);
    const std::string undecided = judge::undecided_figures(checks);
    res.record["data"] = {{"folder", o.get_string("data")}, {"holdout", o.get_int("holdout")},
                          {"samples", static_cast<int64_t>(dirs.size())}, {"sha256", quantize::hash_sample_files(dirs)}};
    res.record["reference"] = "the pipeline's input model";
    res.record["checks"] = checks;
    res.record["verdict"] = !failed.empty() ? "fail" : !undecided.empty() ? "undecided" : "pass";
    res.stats["samples"] = static_cast<int64_t>(dirs.size());
    res.stats["verdict"] = res.record["verdict"];
    if (failed.empty() && !undecided.empty())
      spdlog::warn("check: undecided, too few held-back samples to tell: {}; judge on more with --eval DIR "
                   "(check{{data=DIR}})",
                   undecided);
    if (!failed.empty())
      throw CheckFailed("accuracy budget not met on " + std::to_string(dirs.size()) + " held-back sample(s): " + failed,
                        res.record);
    return res;
  }
};

}  // namespace

std::unique_ptr<Pass> make_pass() { return std::make_unique<CheckPass>(); }

}  // namespace mcc::transforms::check
