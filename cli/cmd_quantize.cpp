// mcc quantize MODEL -o OUT --calib DIR [options]: INT8 post-training quantization, shorthand for
// `mcc convert MODEL -o OUT -p 'fold,quantize{calib=DIR ...}'` (the same pipeline, sidecar and
// replay). `mcc quantize MODEL -o OUT --state STATE` replays a saved state with no calibration
// data and writes a byte-identical model.
#include <memory>

#include "cli/cmd_convert.h"
#include "cli/commands.h"
#include "ir/errors.h"
#include "transforms/pipeline/pipeline.h"
#include "transforms/quantize/policy.h"
#include "transforms/quantize/select.h"

namespace mcc::cli {

namespace {

struct QuantizeOptions {
  std::string input, output, state_path, sidecar_path, calib, method, activations, percentile;
  int64_t samples = -1, keep_float_top = -1, sensitivity_samples = -1;
  std::string mixed_target, mixed_fallback;
  bool per_channel = false, per_tensor = false, symmetric = false, no_fold = false, no_bias = false,
       no_bias_correction = false;
  bool json = false, dry_run = false;
  std::vector<std::string> op_types, exclude, rules;
  int threads = 0;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

/// The pipeline the flags stand for, in canonical text form.
std::string pipeline_for(const QuantizeOptions& q) {
  nlohmann::ordered_json opts = nlohmann::ordered_json::object();
  opts["calib"] = q.calib;
  if (q.samples >= 0) opts["samples"] = q.samples;
  if (!q.method.empty()) opts["method"] = q.method;
  if (!q.percentile.empty()) opts["percentile"] = q.percentile;
  if (q.per_tensor) opts["per_channel"] = false;
  if (!q.activations.empty()) opts["activation_type"] = q.activations;
  if (q.symmetric) opts["symmetric_activations"] = true;
  if (q.no_bias) opts["quantize_bias"] = false;
  if (q.no_bias_correction) opts["bias_correction"] = false;
  if (!q.mixed_target.empty()) opts["mixed_target"] = q.mixed_target;
  if (q.keep_float_top >= 0) opts["keep_float_top"] = q.keep_float_top;
  if (!q.mixed_fallback.empty()) opts["mixed_fallback"] = q.mixed_fallback;
  if (q.sensitivity_samples >= 0) opts["sensitivity_samples"] = q.sensitivity_samples;
  if (!q.op_types.empty()) opts["op_types"] = join(q.op_types);
  if (!q.exclude.empty()) opts["exclude"] = q.exclude;
  if (!q.rules.empty()) opts["rules"] = q.rules;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  if (!q.no_fold) stages.push_back("fold");
  stages.push_back({{"stage", "quantize"}, {"options", opts}});
  return transforms::Pipeline::from_json(stages, "mcc quantize flags").to_string();
}

int run_quantize(const QuantizeOptions& q) {
  ConvertOptions c;
  c.input = q.input;
  c.output = q.output;
  c.sidecar_path = q.sidecar_path;
  c.json = q.json;
  c.dry_run = q.dry_run;
  c.threads = q.threads;
  if (!q.state_path.empty()) {
    if (!q.calib.empty() || !q.method.empty() || q.samples >= 0 || !q.rules.empty() || !q.exclude.empty() ||
        !q.op_types.empty() || !q.activations.empty() || q.per_tensor || q.per_channel ||
        !q.mixed_target.empty() || q.keep_float_top >= 0 || !q.mixed_fallback.empty() || q.sensitivity_samples >= 0)
      throw UsageError("mcc quantize: --state replays the recorded options; drop the other quantization flags");
    c.state_path = q.state_path;
  } else {
    if (q.calib.empty()) throw UsageError("mcc quantize: --calib DIR is required (or --state STATE to replay a saved run)");
    // Syntax errors surface before the model is read (matching needs the model: checked in the stage).
    transforms::quantize::parse_rules(q.rules);
    for (const auto& op : q.op_types)
      if (!transforms::quantize::supported_ops().count(op))
        throw UsageError("mcc quantize: --op-types: cannot quantize '" + op + "'; run 'mcc passes' for the quantize stage's ops");
    c.pipeline = pipeline_for(q);
  }
  return run_convert(c);
}

}  // namespace

void add_quantize_command(CLI::App& app, CommandSlot& slot) {
  auto q = std::make_shared<QuantizeOptions>();
  auto* sub = app.add_subcommand("quantize", "INT8 post-training quantization (QDQ) with calibration; writes the model and its state");
  sub->add_option("model", q->input, "Input .onnx file (float32)")->required();
  sub->add_option("-o,--output", q->output, "Output .onnx file (written atomically)")->required();
  auto* calib = sub->add_option("--calib", q->calib, "Calibration data folder (ONNX test-data or NumPy sample folders)");
  auto* state = sub->add_option("--state", q->state_path, "Replay a saved state (no calibration data needed)");
  calib->excludes(state);
  sub->add_option("--samples", q->samples, "Use at most N calibration samples (default: all)")->check(CLI::NonNegativeNumber);
  sub->add_option("--method", q->method, "Activation range method: minmax (default), percentile, entropy, mse, auto (per activation, "
                  "the best measured of minmax/percentile/mse)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy", "mse", "auto"}));
  sub->add_option("--mixed-target", q->mixed_target,
                  "Keep the activations with the largest measured 8-bit cost float until the mean output cosine on "
                  "calibration samples reaches this value (e.g. 0.99)");
  sub->add_option("--keep-float-top", q->keep_float_top, "Keep exactly K most damaging activations float")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--mixed-fallback", q->mixed_fallback,
                  "What --mixed-target/--keep-float-top give the chosen activations: float (default) or 16bit")
      ->check(CLI::IsMember({"float", "16bit"}));
  sub->add_option("--sensitivity-samples", q->sensitivity_samples,
                  "Calibration samples used to measure sensitivities (default 4)")->check(CLI::PositiveNumber);
  sub->add_option("--percentile", q->percentile, "Percentile for --method percentile (default 99.99)");
  auto* pc = sub->add_flag("--per-channel", q->per_channel, "One weight scale per output channel (default)");
  auto* pt = sub->add_flag("--per-tensor", q->per_tensor, "One weight scale per tensor");
  pc->excludes(pt);
  sub->add_option("--activations", q->activations, "Activation type: uint8 (default, asymmetric), int8 (symmetric), uint16, int16")
      ->check(CLI::IsMember({"uint8", "int8", "uint16", "int16"}));
  sub->add_flag("--symmetric-activations", q->symmetric, "Symmetric ranges for unsigned activations too");
  sub->add_option("--op-types", q->op_types, "Ops to quantize (default Conv,ConvTranspose,Gemm,MatMul)")->delimiter(',');
  sub->add_option("--exclude", q->exclude, "Keep nodes in float: name, output name, op type or regex (repeatable)");
  sub->add_option("--rule", q->rules,
                  "Per-layer rule REGEX:action[+action], first match wins (repeatable, in order); actions skip, "
                  "per_tensor, per_channel, uint8, int8, uint16, int16, minmax, percentile, entropy, mse");
  sub->add_flag("--no-bias", q->no_bias, "Keep Conv/Gemm biases in float32");
  sub->add_flag("--no-bias-correction", q->no_bias_correction,
                "Do not correct biases for the mean shift weight rounding causes");
  sub->add_flag("--no-fold", q->no_fold, "Do not run the fold stage first");
  sub->add_option("--sidecar", q->sidecar_path, "Where to write the state (default: <OUT without .onnx>.mcc.json)");
  sub->add_flag("--json", q->json, "Print the run's state as JSON on stdout");
  sub->add_flag("--dry-run", q->dry_run, "Print the pipeline these flags stand for and exit");
  sub->add_option("--threads", q->threads, "Threads for calibration (0: all cores)")->check(CLI::NonNegativeNumber);
  sub->footer(
      "Examples:\n"
      "  mcc quantize model.onnx -o model.int8.onnx --calib calib_data/\n"
      "  mcc quantize model.onnx -o q.onnx --calib data/ --samples 100 --method entropy \\\n"
      "      --rule 'conv1:skip' --rule 'head.*:per_tensor+int8'\n"
      "  mcc quantize model.onnx -o q2.onnx --state q.mcc.json     # byte-identical, no data needed\n"
      "Same as: mcc convert MODEL -o OUT -p 'fold,quantize{calib=DIR ...}' (see 'mcc passes').");
  sub->callback([q, &slot] { slot.set([q] { return run_quantize(*q); }); });
}

}  // namespace mcc::cli
