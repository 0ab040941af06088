// mcc quantize MODEL -o OUT --calib DIR [options]: INT8 post-training quantization, shorthand for
// `mcc convert MODEL -o OUT -p 'fold,quantize{calib=DIR ...}'` (the same pipeline, sidecar and
// replay). `mcc quantize MODEL -o OUT --state STATE` replays a saved state with no calibration
// data and writes a byte-identical model.
//
// Every run checks itself (judge/quantize_budget.h): a check stage compares the result with the
// input model on samples it was not calibrated on (--eval DIR, else the calibration folder's last
// samples, held back from calibration) against a budget (--min-cosine, --min-top1, --labels with
// --max-top1-drop; defaults: cosine >= 0.99 for outputs that are not class scores, top-1 agreement
// >= 99 % for class scores). While the budget is unmet the run escalates from the cheap
// configuration (the given one) to measured per-activation methods, then to keeping the most
// damaging activations float; each rejected configuration is recorded in the sidecar's
// "escalation", and the accepted one is the pipeline the state replays. Unmet at the last step:
// exit 1, no model, the figures in the report.
// --html FILE then draws the accepted model against the input model on the samples the check
// judged (report/quantize_page.h); a run that fails its budget writes no model and no page.
//
// The flags that set quantize stage options are one table (kStageFlags: flag, option key, help);
// each flag's type, legal values and default come from the stage's own declaration (its PassInfo
// in the registry), so a choice added to the stage shows up here with no edit. Value ranges are
// the stage's too (quantize/config.h), checked before the model is read.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <memory>

#include "cli/cmd_convert.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "io/files.h"
#include "io/sidecar.h"
#include "io/terminal.h"
#include "ir/errors.h"
#include "ir/free_memory.h"
#include "judge/quantize_budget.h"
#include "judge/sequence_figures.h"
#include "report/quantize_page.h"
#include "transforms/check/check.h"
#include "transforms/pipeline/pipeline.h"
#include "transforms/quantize/calibration_cache.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/policy.h"
#include "transforms/quantize/select.h"

namespace mcc::cli {

namespace {

/// One `mcc quantize` flag and the quantize stage option it sets.
struct StageFlag {
  const char* flag;
  const char* key;             // the stage option
  const char* help = nullptr;  // nullptr: the stage option's own help
  const char* sets = nullptr;  // a switch (no argument): the value it sets
  char delimiter = '\0';       // list options: one argument may hold several items split here
};

constexpr StageFlag kStageFlags[] = {
    {.flag = "--target", .key = "target",
     .help = "Runtime the model is laid out for: ort (ONNX Runtime: QDQ where its fusion runs int8 kernels), "
             "openvino, or generic (QDQ on weighted ops' inputs, per-channel depthwise inputs)"},
    {.flag = "--mode", .key = "mode",
     .help = "static (calibrated QDQ), dynamic (MatMul/Gemm; activations quantized at run time, no --calib) or "
             "weight_only (MatMul weights in int4/int8 blocks, activations float; --calib only for --algorithm gptq or --awq)"},
    {.flag = "--embeddings", .key = "embeddings",
     .help = "--mode dynamic or weight_only: store Gather tables (embeddings) as int8, one scale per column, gathered as "
             "int8 rows", .sets = "true"},
    {.flag = "--no-embeddings", .key = "embeddings", .help = "--mode dynamic or weight_only: keep Gather tables float",
     .sets = "false"},
    {.flag = "--dynamic-activations", .key = "dynamic_activations",
     .help = "--mode dynamic: auto (per_token on a causal LM's activations and on feed-forward ones, per_tensor elsewhere), per_token (each "
             "row's own run-time range) or per_tensor (one per activation, ONNX Runtime quantize_dynamic's form)"},
    {.flag = "--bits", .key = "bits", .help = "--mode weight_only: bits per weight, 4 or 8"},
    {.flag = "--ratio", .key = "ratio",
     .help = "--mode weight_only --bits 4: least share of weight elements at 4 bits; the costliest weights become 8-bit "
             "(e.g. 0.8)"},
    {.flag = "--lm-head-block-size", .key = "lm_head_block_size",
     .help = "--mode weight_only --bits 4: blocks of a layer writing causal-LM logits (an output named *logits*) when "
             "smaller than --block-size (0: off)"},
    {.flag = "--block-size", .key = "block_size", .help = "--mode weight_only: weights per scale along K (power of two >= 16)"},
    {.flag = "--algorithm", .key = "algorithm",
     .help = "How weights are rounded: auto (default: rtn), rtn (to nearest) or gptq (from the calibration inputs' "
             "Hessians; --mode static or weight_only, needs --calib)"},
    {.flag = "--weight-zero-point", .key = "weight_zero_point",
     .help = "--mode weight_only: asymmetric blocks with zero points (uint4/uint8)", .sets = "true"},
    {.flag = "--symmetric-weights", .key = "weight_zero_point",
     .help = "--mode weight_only: symmetric blocks, no zero points (int4/int8)", .sets = "false"},
    {.flag = "--scale-search", .key = "scale_search",
     .help = "--mode weight_only: search each block's range for the least squared rounding error (clips the largest "
             "weights: lower weight error, often a worse LLM)", .sets = "true"},
    {.flag = "--awq", .key = "awq",
     .help = "--mode weight_only: activation-aware weight scales (AWQ), searched per MatMul input on --calib data",
     .sets = "true"},
    {.flag = "--weight-format", .key = "weight_format",
     .help = "--mode weight_only: qdq (DequantizeLinear block_size, opset 21), matmul_nbits (com.microsoft.MatMulNBits) "
             "or target (matmul_nbits for --target ort, else qdq)"},
    {.flag = "--calib", .key = "calib", .help = "Calibration data folder (ONNX test-data or NumPy sample folders)"},
    {.flag = "--samples", .key = "samples", .help = "Use at most N calibration samples; 0: all"},
    {.flag = "--method", .key = "method",
     .help = "Activation range method (auto: per activation, the best measured of minmax/percentile/mse)"},
    {.flag = "--mixed-target", .key = "mixed_target",
     .help = "Keep the activations with the largest measured 8-bit cost float until the mean output cosine on "
             "calibration samples reaches this value, e.g. 0.99; 0: off"},
    {.flag = "--keep-float-top", .key = "keep_float_top", .help = "Keep exactly K most damaging activations float; 0: off"},
    {.flag = "--mixed-fallback", .key = "mixed_fallback",
     .help = "What --mixed-target/--keep-float-top give the chosen activations: float or 16bit"},
    {.flag = "--sensitivity-samples", .key = "sensitivity_samples", .help = "Calibration samples used to measure sensitivities"},
    {.flag = "--percentile", .key = "percentile", .help = "Percentile kept by --method percentile, in (50, 100]"},
    {.flag = "--per-channel", .key = "per_channel", .help = "One weight scale per output channel", .sets = "true"},
    {.flag = "--per-tensor", .key = "per_channel", .help = "One weight scale per tensor", .sets = "false"},
    {.flag = "--activations", .key = "activation_type",
     .help = "Activation type (uint8 asymmetric, int8 symmetric; 16-bit needs opset 21)"},
    {.flag = "--symmetric-activations", .key = "symmetric_activations", .help = "Symmetric ranges for unsigned activations too",
     .sets = "true"},
    {.flag = "--op-types", .key = "op_types", .help = "Ops to quantize (default: the target's list)", .delimiter = ','},
    {.flag = "--exclude", .key = "exclude", .help = "Keep nodes in float: name, output name, op type or regex (repeatable)"},
    {.flag = "--rule", .key = "rules", .help = nullptr},
    {.flag = "--no-bias", .key = "quantize_bias", .help = "Keep Conv/Gemm biases in float32", .sets = "false"},
    {.flag = "--no-bias-correction", .key = "bias_correction",
     .help = "Do not correct biases for the mean shift weight rounding causes", .sets = "false"},
    {.flag = "--smooth-quant", .key = "smooth_quant",
     .help = "SmoothQuant strength ALPHA in (0, 1], e.g. 0.5: move LayerNorm output outliers into the MatMul/Gemm "
             "weights reading them before calibrating; 0: off"},
};

struct QuantizeOptions {
  std::string input, output, state_path, sidecar_path, report_path;
  std::string html;  // --html FILE: the comparison page of the accepted model
  nlohmann::ordered_json stage = nlohmann::ordered_json::object();  // quantize options the flags set
  bool no_fold = false, json = false, dry_run = false;
  int threads = 0;
  judge::BudgetOptions budget;

  std::vector<std::string> list(const char* key) const {
    return stage.contains(key) ? stage[key].get<std::vector<std::string>>() : std::vector<std::string>{};
  }
};

const transforms::OptionSpec& stage_option(const std::string& key) {
  const transforms::PassInfo* info = transforms::builtin_passes().find("quantize");
  MCC_CHECK(info, "the quantize stage is not registered");
  for (const auto& o : info->options)
    if (o.key == key) return o;
  throw InternalError("mcc quantize: the quantize stage declares no option '" + key + "'");
}

std::string flag_help(const StageFlag& f, const transforms::OptionSpec& spec) {
  const std::string help = f.help ? f.help : spec.help + " (repeatable, in order)";
  if (f.sets) return spec.default_value == f.sets ? help + " (default)" : help;
  return spec.default_value.empty() ? help : help + " (default " + spec.default_value + ")";
}

/// Accepts what the stage option's type accepts (the pipeline spec's own check).
CLI::Validator stage_value(const transforms::OptionSpec& spec) {
  return CLI::Validator(
      [spec](std::string& v) {
        try {
          transforms::canonical_option_value("quantize", spec, v);
          return std::string();
        } catch (const UsageError& e) {
          return std::string(e.what());
        }
      },
      "");
}

/// Declares every flag of kStageFlags on `sub`; flags that set the same option exclude each other.
void add_stage_flags(CLI::App& sub, const std::shared_ptr<QuantizeOptions>& q, std::map<std::string, CLI::Option*>& by_flag) {
  std::map<std::string, std::vector<CLI::Option*>> by_key;
  for (const StageFlag& f : kStageFlags) {
    const transforms::OptionSpec& spec = stage_option(f.key);
    const std::string key = f.key;
    CLI::Option* opt = nullptr;
    if (f.sets) {
      const std::string value = f.sets;
      opt = sub.add_flag_callback(f.flag, [q, key, value] { q->stage[key] = value; }, flag_help(f, spec));
    } else if (spec.type == transforms::OptionType::StringList) {
      opt = sub.add_option_function<std::vector<std::string>>(
          f.flag, [q, key](const std::vector<std::string>& v) { q->stage[key] = v; }, flag_help(f, spec));
      if (f.delimiter) opt->delimiter(f.delimiter);
    } else {
      opt = sub.add_option_function<std::string>(
          f.flag, [q, key](const std::string& v) { q->stage[key] = v; }, flag_help(f, spec));
      if (spec.type == transforms::OptionType::Int) opt->type_name("INT");
      if (spec.type == transforms::OptionType::Float) opt->type_name("FLOAT");
    }
    if (!f.sets) opt->check(spec.choices.empty() ? stage_value(spec) : CLI::IsMember(spec.choices));
    for (CLI::Option* other : by_key[key]) opt->excludes(other);
    by_key[key].push_back(opt);
    by_flag[f.flag] = opt;
  }
}

/// --eval, --holdout, --min-cosine, --min-top1, --labels, --max-top1-drop, --no-check, --no-escalate.
void add_budget_flags(CLI::App& sub, judge::BudgetOptions& b) {
  sub.add_option("--eval", b.eval_dir,
                 "Samples the self-check judges on (default: the calibration folder's last samples, held back from "
                 "calibration)");
  sub.add_option("--holdout", b.holdout, "Calibration samples held back for the self-check (default: a fifth, 1 to 32)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--min-cosine", b.min_cosine, "Budget: least mean output cosine (default 0.99, for outputs that are not class scores; a value given applies to every float output)")
      ->check(CLI::Range(-1.0, 1.0));
  sub.add_option("--min-top1", b.min_top1, "Budget: least top-1 agreement with the float model, class scores (default 0.99)")
      ->check(CLI::Range(0.0, 1.0));
  sub.add_option("--labels", b.labels, "Labels of the judged folder's samples (one integer per sample, .npy or text)");
  sub.add_option("--max-top1-drop", b.max_top1_drop, "Budget with --labels: most top-1 accuracy drop, in points")
      ->check(CLI::NonNegativeNumber);
  sub.add_flag("--no-check", b.no_check, "Skip the self-check (no verdict, no budget)");
  sub.add_flag("--no-escalate", b.no_escalate, "Only the given configuration: fail instead of escalating when the budget is unmet");
}

/// Runs the pipelines in order until one meets its check; earlier misses go to the sidecar's
/// "escalation". The last miss is the run's failure (exit 1, no model, the report written).
/// `language_model_step` (may be empty) goes next, once, after a miss on causal-LM logits.
int run_with_budget(ConvertOptions c, std::vector<std::string> pipelines, const std::string& language_model_step = "") {
  c.started = std::chrono::steady_clock::now();
  // Every attempt calibrates the same float model on the same samples: once is enough.
  const transforms::quantize::CalibrationReuse reuse(pipelines.size() > 1);
  nlohmann::ordered_json missed = nlohmann::ordered_json::array();
  for (size_t i = 0; i < pipelines.size(); ++i) {
    const bool last = i + 1 == pipelines.size();
    c.pipeline = pipelines[i];
    c.report_check_failure = last;
    c.escalation = missed.empty() ? nlohmann::ordered_json() : missed;
    try {
      return run_convert(c);
    } catch (transforms::check::CheckFailed& e) {
      const bool language_model = !language_model_step.empty() && judge::judged_language_model(e.record().value("checks", nlohmann::ordered_json::array())) &&
                                  std::find(pipelines.begin(), pipelines.end(), language_model_step) == pipelines.end();
      if (language_model) pipelines.insert(pipelines.begin() + static_cast<std::ptrdiff_t>(i) + 1, language_model_step);
      if (last && !language_model) throw;
      missed.push_back({{"pipeline", pipelines[i]}, {"verdict", "fail"}, {"why", e.message()},
                        {"checks", e.record().value("checks", nlohmann::ordered_json::array())}});
      spdlog::warn("quantize: {}; escalating (step {} of {})", e.message(), i + 2, pipelines.size());
    }
    ir::release_free_memory();  // the rejected attempt's model and buffers, before the next loads its own
  }
  throw InternalError("mcc quantize: no configuration to try");
}

/// The pipeline the flags stand for with these quantize options, in canonical text form. The
/// stages' value checks run here, before the model is read.
std::string pipeline_for(const QuantizeOptions& q, const nlohmann::ordered_json& stage, const nlohmann::ordered_json& check) {
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  if (!q.no_fold) stages.push_back("fold");
  stages.push_back({{"stage", "quantize"}, {"options", stage}});
  if (!check.is_null()) stages.push_back({{"stage", "check"}, {"options", check}});
  const auto pipeline = transforms::Pipeline::from_json(stages, "mcc quantize flags");
  transforms::quantize::read_config(pipeline.stages()[q.no_fold ? 0 : 1].options);
  return pipeline.to_string();
}

int run_quantize(const QuantizeOptions& q) {
  ConvertOptions c;
  c.input = q.input;
  c.output = q.output;
  c.sidecar_path = q.sidecar_path;
  c.json = q.json;
  c.dry_run = q.dry_run;
  c.threads = q.threads;
  if (!q.html.empty()) {
    if (!q.state_path.empty())
      throw UsageError("mcc quantize: --html draws the self-check's samples; a --state replay runs no data, drop --html");
    if (q.budget.no_check) throw UsageError("mcc quantize: --html shows the self-check's verdict; drop --no-check");
    io::check_output_path(q.html, "--html");
    if (io::same_file(q.html, q.input) || io::same_file(q.html, q.output))
      throw UsageError(q.html + ": --html names the input or output model; choose another path");
  }
  if (!q.state_path.empty()) {
    if (!q.stage.empty())
      throw UsageError("mcc quantize: --state replays the recorded options; drop the other quantization flags");
    c.state_path = q.state_path;
  } else {
    // Static quantization calibrates; a mode that quantizes activations at run time does not.
    const std::string mode = q.stage.value("mode", "static");
    const bool calibrates = mode == "static" || (mode == "weight_only" && (q.stage.value("algorithm", "rtn") == "gptq" ||
                                                                           q.stage.value("awq", "false") == "true"));
    if (calibrates && q.stage.value("calib", "").empty())
      throw UsageError("mcc quantize: --calib DIR is required (or --state STATE to replay a saved run)");
    // Syntax errors surface before the model is read (matching needs the model: checked in the stage).
    transforms::quantize::parse_rules(q.list("rules"));
    for (const auto& op : q.list("op_types"))
      if (!transforms::quantize::supported_ops().count(op))
        throw UsageError("mcc quantize: --op-types: cannot quantize '" + op + "'; run 'mcc passes' for the quantize stage's ops");
    const judge::BudgetPlan plan = judge::plan_budget(q.budget, q.stage);
    if (!q.html.empty() && plan.check.is_null())
      throw UsageError("mcc quantize: --html needs the self-check, which has no samples to judge here: give --eval DIR");
    std::vector<std::string> pipelines;
    for (const auto& attempt : plan.attempts) pipelines.push_back(pipeline_for(q, attempt, plan.check));
    if (q.dry_run) {
      c.pipeline = pipelines.front();
      return run_convert(c);
    }
    c.report_path = q.report_path;
    const std::string lm_step = plan.language_model_step.is_null() || pipelines.size() < 2
                                    ? std::string()
                                    : pipeline_for(q, plan.language_model_step, plan.check);
    const int rc = run_with_budget(c, pipelines, lm_step);
    if (!q.html.empty()) {
      report::write_quantize_html(q.html, q.input, q.output, c.sidecar_path.empty() ? io::default_sidecar_path(q.output) : c.sidecar_path,
                          q.threads);
      if (!q.json) io::print_out("wrote %s\n", q.html.c_str());
    }
    return rc;
  }
  return run_convert(c);
}

}  // namespace

void add_quantize_command(CLI::App& app, CommandSlot& slot) {
  auto q = std::make_shared<QuantizeOptions>();
  auto* sub = app.add_subcommand("quantize", "INT8 post-training quantization (QDQ) with calibration; writes the model and its state");
  sub->add_option("model", q->input, "Input .onnx file (float32)")->required();
  sub->add_option("-o,--output", q->output, "Output .onnx file (written atomically)")->required();
  auto* state = sub->add_option("--state", q->state_path, "Replay a saved state (no calibration data needed)");
  std::map<std::string, CLI::Option*> stage_flags;
  add_stage_flags(*sub, q, stage_flags);
  stage_flags.at("--calib")->excludes(state);
  sub->add_flag("--no-fold", q->no_fold, "Do not run the fold stage first");
  sub->add_option("--sidecar", q->sidecar_path, "Where to write the state (default: <OUT without .onnx>.mcc.json)");
  add_json_flag(sub, q->json, "the run's state");
  sub->add_flag("--dry-run", q->dry_run, "Print the pipeline these flags stand for and exit");
  add_threads_flag(sub, q->threads, "for calibration");
  add_budget_flags(*sub, q->budget);
  add_report_flag(sub, q->report_path, "the self-check's figures and the configurations tried");
  sub->add_option("--html", q->html,
                  "After a passing run, also write FILE: one self-contained HTML page of the written model against the "
                  "input model on the samples the self-check judged (its verdict and figures, the command, per-layer "
                  "SNR chart, activation histograms with quantization ranges, weight ranges; no network access "
                  "needed; not with --state or --no-check)");
  sub->footer(
      "Examples:\n"
      "  mcc quantize model.onnx -o model.int8.onnx --calib calib_data/\n"
      "  mcc quantize model.onnx -o q.onnx --calib data/ --samples 100 --method entropy \\\n"
      "      --rule 'conv1:skip' --rule 'head.*:per_tensor+int8'\n"
      "  mcc quantize model.onnx -o q2.onnx --state q.mcc.json     # byte-identical, no data needed\n"
      "  mcc quantize model.onnx -o q.onnx --calib calib/ --eval held_out/ --min-cosine 0.995\n"
      "  mcc quantize model.onnx -o q.onnx --calib calib/ --labels calib_labels.txt --max-top1-drop 0.5\n"
      "  mcc quantize model.onnx -o q.onnx --calib calib/ --html q.report.html  # the check's samples, per layer\n"
      "Same as: mcc convert MODEL -o OUT -p 'fold,quantize{calib=DIR ...}' (see 'mcc passes').");
  sub->callback([q, &slot] { slot.set([q] { return run_quantize(*q); }); });
}

}  // namespace mcc::cli
