// mcc eval: runs a model on a backend and compares its outputs with golden outputs (--golden DIR)
// or with a reference model on the same inputs (--reference MODEL --inputs DIR | --random SEED).
// Prints per-output metrics (max abs/rel, mean abs, cosine, SNR, top-1 agreement) and a verdict;
// exit 0 when every check passed, 1 otherwise. Golden data in ONNX's test-data layout may hold
// sequences and optionals (compared element by element, see judge/verdict.h); --save-outputs writes
// each sample's tensor outputs as OUT_DIR/<sample>/output_K.npy. --labels FILE adds top-1 accuracy
// of class-score outputs against labels (and the reference's, and the drop; see judge/top1.h).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "backends/executor.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "io/files.h"
#include "io/json_text.h"
#include "io/samples.h"
#include "ir/decoder_feeds.h"
#include "io/terminal.h"
#include "ir/npy.h"
#include "judge/eval_outputs.h"
#include "judge/per_layer.h"
#include "judge/probability_outputs.h"
#include "judge/top1.h"
#include "judge/verdict.h"
#include "report/comparison_page.h"
#include "report/eval_text.h"

namespace fs = std::filesystem;

namespace mcc::cli {
namespace {

// "attention_mask, position_ids and 60 past-cache inputs".
std::string describe_defaulted(const ir::Graph& g, const std::vector<std::string>& names) {
  std::string out;
  size_t cache = 0;
  for (const auto& n : names) {
    if (const ir::Value* v = g.find_value(n); v && ir::is_past_cache_input(*v)) {
      ++cache;
      continue;
    }
    out += (out.empty() ? "" : ", ") + n;
  }
  if (cache) out += (out.empty() ? "" : " and ") + std::to_string(cache) + " past-cache input" + (cache > 1 ? "s" : "");
  return out;
}

}  // namespace

struct EvalOptions {
  std::string model, golden, reference, inputs, save_outputs, report, backend = "cpu";
  std::string labels;
  double max_top1_drop = -1, min_top1 = -1;  // points / percent; < 0: not set
  int threads = 0;
  int64_t random_seed = -1;
  int random_count = 1;
  size_t max_samples = 0;
  std::vector<std::string> dims, shapes, atol, rtol, metrics;
  double min_cosine = -1, min_snr = std::numeric_limits<double>::quiet_NaN();
  double max_perplexity_ratio = -1, min_token_agreement = -1, max_kl = -1;  // < 0: the profile's default
  bool json = false, per_layer = false;
  size_t per_layer_top = 20, per_layer_exclude = 3;
  std::string html;  // --html FILE (with --per-layer)
};

int run_eval(const EvalOptions& o) {
  const bool have_golden = !o.golden.empty(), have_ref = !o.reference.empty();
  const bool have_inputs = !o.inputs.empty() || o.random_seed >= 0;
  if (o.per_layer && !have_ref) throw UsageError("--per-layer compares with a reference model: add --reference MODEL");
  if (have_golden && have_ref) throw UsageError("--golden and --reference exclude each other");
  if (have_golden && have_inputs) throw UsageError("--golden DIR already holds the inputs; drop --inputs/--random");
  if (have_ref && !have_inputs) throw UsageError("--reference needs inputs: add --inputs DIR or --random SEED");
  if (!have_golden && !have_inputs) throw UsageError("nothing to run: give --golden DIR, or --inputs DIR / --random SEED");
  if (!o.inputs.empty() && o.random_seed >= 0) throw UsageError("--inputs and --random exclude each other");
  if (o.labels.empty() && (o.max_top1_drop >= 0 || o.min_top1 >= 0))
    throw UsageError("--max-top1-drop and --min-top1 need --labels FILE");
  if (!o.labels.empty() && o.random_seed >= 0) throw UsageError("--labels scores the samples of a folder; --random has none");
  if (o.max_top1_drop >= 0 && !have_golden && !have_ref)
    throw UsageError("--max-top1-drop compares with a reference: add --reference MODEL (or use --golden DIR)");
  io::ShapeOverrides shape_over;
  for (const auto& d : o.dims) io::parse_dim_flag(d, shape_over);
  for (const auto& s : o.shapes) io::parse_shape_flag(s, shape_over);

  io::InputModel model = io::load_input_model(o.model, false, false);
  std::unique_ptr<io::InputModel> ref;
  if (have_ref) ref = std::make_unique<io::InputModel>(io::load_input_model(o.reference, false, false));
  const ir::Graph& g = *model.model.graph;
  if (ref && ref->model.graph->outputs.size() != g.outputs.size())
    throw ModelError(o.reference + ": the reference has " + std::to_string(ref->model.graph->outputs.size()) +
                     " outputs, " + o.model + " has " + std::to_string(g.outputs.size()));

  std::string profile = judge::model_precision(model.model);
  if (ref) profile = judge::looser_precision(profile, judge::model_precision(ref->model));
  judge::VerdictRules rules = judge::default_rules(profile);
  for (const auto& a : o.atol) judge::apply_tolerance_flag(rules, "--atol", a);
  for (const auto& r : o.rtol) judge::apply_tolerance_flag(rules, "--rtol", r);
  for (const auto& m : o.metrics) judge::apply_metric_flag(rules, m);
  for (const auto& out : rules.row_cosine_outputs)
    if (!g.find_value(out)) throw UsageError("--metric '" + out + ":row-cosine': the model has no output '" + out + "'");
  if (o.min_cosine >= 0) rules.min_cosine = o.min_cosine;
  if (!std::isnan(o.min_snr)) rules.min_snr_db = o.min_snr;
  if (o.max_perplexity_ratio >= 0) rules.sequence.max_perplexity_ratio = o.max_perplexity_ratio;
  if (o.min_token_agreement >= 0) rules.sequence.min_token_agreement = o.min_token_agreement;
  if (o.max_kl >= 0) {
    rules.sequence.max_kl = o.max_kl;
    rules.sequence.judged.insert("kl");
  }
  for (const auto& [out, named] : rules.lm_metrics) {
    (void)named;
    if (!out.empty() && !g.find_value(out)) throw UsageError("--metric '" + out + ":...': the model has no output '" + out + "'");
  }
  for (const auto& [out, v] : rules.atol_by_output) {
    (void)v;
    if (!g.find_value(out)) throw UsageError("--atol '" + out + ":...': the model has no output '" + out + "'");
  }

  const auto eopts = exec_options(o.backend, o.threads);
  backends::Executor exec(model.model, eopts);
  std::unique_ptr<backends::Executor> ref_exec;
  if (ref) ref_exec = std::make_unique<backends::Executor>(ref->model, eopts);
  // Created once the models load and the backend runs here: a failed run leaves nothing behind.
  if (!o.save_outputs.empty()) {
    std::error_code ec;
    fs::create_directories(o.save_outputs, ec);
    if (ec || !fs::is_directory(o.save_outputs)) throw UsageError("--save-outputs '" + o.save_outputs + "': cannot create the folder");
  }
  if (!o.html.empty() && !o.per_layer) throw UsageError("--html draws the per-layer comparison: add --per-layer");
  if (!o.html.empty()) io::check_output_path(o.html, "--html");
  std::unique_ptr<judge::PerLayerComparator> per_layer;
  if (o.per_layer) {
    per_layer = std::make_unique<judge::PerLayerComparator>(model.model, ref->model);
    per_layer->attach(exec, *ref_exec);
  }

  std::vector<std::string> output_names;
  for (const ir::Value* v : g.outputs) output_names.push_back(v->name);
  // Probability outputs (a Sigmoid's): read from the reference when there is one (the float model).
  judge::EvalOutputs judged(rules, output_names, judge::probability_outputs(ref ? *ref->model.graph : g));
  nlohmann::ordered_json samples_json = nlohmann::ordered_json::array();

  std::vector<std::string> dirs;
  const std::string data_dir = have_golden ? o.golden : o.inputs;
  if (!data_dir.empty()) dirs = io::sample_dirs(data_dir, o.max_samples);
  const size_t n_samples = data_dir.empty() ? static_cast<size_t>(std::max(1, o.random_count)) : dirs.size();
  std::optional<judge::Top1Accuracy> top1_acc;
  if (!o.labels.empty()) {
    top1_acc.emplace(judge::labels_for_samples(o.labels, data_dir, io::sample_dirs(data_dir, 0).size(), dirs.size()),
                     output_names);
  }

  std::vector<std::string> defaulted;  // a KV-cache decoder's inputs the samples leave out
  for (size_t i = 0; i < n_samples; ++i) {
    ir::BoundSample s = data_dir.empty()
                            ? io::random_sample(g, shape_over, static_cast<uint64_t>(o.random_seed), static_cast<int>(i))
                            : ir::bind_sample(g, ir::load_sample(dirs[i], have_golden || o.reference.empty()), true);
    if (i == 0) defaulted = s.defaulted;
    const judge::SequenceFeeds seq = judge::sequence_feeds(s.feeds);
    auto outs = exec.run(io::to_feeds(s));
    if (!o.save_outputs.empty()) {
      const fs::path d = fs::path(o.save_outputs) / s.name;
      fs::create_directories(d);
      for (size_t k = 0; k < outs.size(); ++k) {
        if (outs[k].kind != backends::RValue::Kind::Tensor)
          throw UnsupportedError("output '" + g.outputs[k]->name + "' is not a tensor and cannot be saved as .npy");
        ir::save_npy(outs[k].tensor, (d / ("output_" + std::to_string(k) + ".npy")).string());
      }
    }
    std::vector<std::optional<backends::RValue>> want(outs.size());
    if (ref) {
      auto r = ref_exec->run(io::to_feeds(s));
      for (size_t k = 0; k < r.size(); ++k) want[k] = std::move(r[k]);
      if (per_layer) per_layer->end_sample();
    } else {
      for (size_t k = 0; k < outs.size(); ++k)
        if (s.expected[k]) want[k] = io::to_rvalue(*s.expected[k]);
      if (have_golden && std::none_of(want.begin(), want.end(), [](const auto& w) { return w.has_value(); }))
        throw ModelError(dirs[i] + ": no expected outputs (output_K.pb / output_K.npy / <output name>.npy)");
    }
    if (top1_acc) top1_acc->add(i, outs, want);
    samples_json.push_back(judged.add_sample(s.name, outs, want, seq));
  }

  const int compared = judged.compared();
  const bool all_ok = judged.passed();
  const bool nothing = compared == 0 && !o.save_outputs.empty();
  const judge::Top1Limits top1_limits{o.max_top1_drop >= 0 ? std::optional<double>(o.max_top1_drop) : std::nullopt,
                               o.min_top1 >= 0 ? std::optional<double>(o.min_top1) : std::nullopt};
  const std::vector<judge::Top1Row> top1_rows = top1_acc ? top1_acc->finish(top1_limits) : std::vector<judge::Top1Row>{};
  const bool top1_ok = std::all_of(top1_rows.begin(), top1_rows.end(), [](const judge::Top1Row& r) { return r.passed; });
  nlohmann::ordered_json result{{"model", o.model},
                                {"against", have_golden ? "golden" : (have_ref ? "reference" : "none")},
                                {"source", have_golden ? o.golden : (have_ref ? o.reference : "")},
                                {"backend", o.backend}, {"threads", exec.threads()},
                                {"samples", n_samples}, {"rules", judge::describe_rules(rules)},
                                {"outputs", judged.outputs_json()}, {"per_sample", samples_json},
                                {"passed", all_ok && top1_ok}};
  const nlohmann::ordered_json sequence = judged.sequence_json();
  if (!sequence.empty()) result["sequence"] = sequence;
  if (top1_acc) result["top1"] = judge::top1_json(top1_rows, top1_limits, o.labels);
  std::optional<judge::PerLayerReport> layers;
  if (per_layer) {
    layers = per_layer->finish(o.per_layer_exclude);
    result["per_layer"] = judge::per_layer_json(*layers, o.per_layer_top);
  }
  if (!o.report.empty()) io::write_file_atomically(o.report, io::dump_json(result, 2) + "\n");
  if (!o.html.empty()) {
    // The histogram pass runs the reference again over the same samples.
    auto each_sample = [&](const std::function<void(const io::SampleFeeds&)>& visit) {
      for (size_t i = 0; i < n_samples; ++i) {
        ir::BoundSample s = data_dir.empty()
                                ? io::random_sample(g, shape_over, static_cast<uint64_t>(o.random_seed), static_cast<int>(i))
                                : ir::bind_sample(g, ir::load_sample(dirs[i], false), true);
        visit(io::to_feeds(s));
      }
    };
    report::write_eval_html(o.html, {result, *layers, model.model, ref->model, *ref_exec, each_sample});
  }

  if (o.json) {
    io::print_requested(io::dump_json(result, 2) + "\n");
  } else {
    io::print_out("model %s, %zu sample(s), backend %s, %d thread(s)\n", o.model.c_str(), n_samples, o.backend.c_str(), exec.threads());
    if (!defaulted.empty())
      io::print_out("fed as an empty-cache prefill (not in the samples): %s\n", describe_defaulted(g, defaulted).c_str());
    if (compared == 0 && sequence.empty()) {
      io::print_out("no expected outputs to compare%s\n", nothing ? "; outputs saved" : "");
    } else if (compared == 0) {
      if (nothing) io::print_out("outputs saved\n");
    } else {
      report::print_eval_outputs(judged);
    }
    if (!sequence.empty()) report::print_sequence_figures(sequence);
    if (top1_acc) report::print_top1(top1_rows, top1_limits, o.labels, have_golden ? "golden" : "reference");
    if (compared > 0 || top1_acc) io::print_out("verdict: %s\n", all_ok && top1_ok ? "PASS" : "FAIL");
    if (layers) report::print_per_layer(*layers, o.per_layer_top);
  }
  judged.throw_if_failed();
  for (const auto& r : top1_rows)
    if (!r.passed) throw AccuracyError("top-1 accuracy check failed: output '" + r.output + "': " + r.why);
  return 0;
}

void add_eval_command(CLI::App& app, CommandSlot& slot) {
  auto o = std::make_shared<EvalOptions>();
  auto* sub = app.add_subcommand("eval", "Run a model and compare with golden outputs or a reference model");
  sub->add_option("model", o->model, "Model to run (.onnx)")->required();
  sub->add_option("--golden", o->golden, "Folder of samples with inputs and expected outputs");
  sub->add_option("--reference", o->reference, "Reference model run on the same inputs");
  sub->add_option("--inputs", o->inputs, "Folder of input samples (ONNX test-data or NumPy layout)");
  sub->add_option("--random", o->random_seed, "Generate seeded random inputs instead of --inputs");
  sub->add_option("--random-samples", o->random_count, "How many random samples (default 1)");
  sub->add_option("--samples", o->max_samples, "Use at most N samples of the folder");
  sub->add_option("--dim", o->dims, "Set a symbolic dim: name=value (repeatable)");
  sub->add_option("--shape", o->shapes, "Set an input shape: input=1x3x224x224 (repeatable)");
  sub->add_option("--atol", o->atol, "Absolute tolerance, global or per output (out:1e-3); enables allclose");
  sub->add_option("--rtol", o->rtol, "Relative tolerance, global or per output (out:1e-3); enables allclose");
  sub->add_option("--min-cosine", o->min_cosine, "Minimum cosine similarity per output");
  sub->add_option("--min-snr", o->min_snr, "Minimum SNR in dB per output");
  sub->add_option("--metric", o->metrics,
                  "row-cosine: judge cosine as the mean over rows along the last axis (embeddings: one per row); "
                  "perplexity | token-agreement | kl: treat the output as causal-LM logits scored against the "
                  "sample's input_ids and judge those figures (outputs named *logits* are found without it); "
                  "global or per output (out:metric)");
  sub->add_option("--max-perplexity-ratio", o->max_perplexity_ratio,
                  "Causal-LM logits: most perplexity relative to the reference (default: fp32 1.001, fp16 1.01, "
                  "bf16 1.05, int8/int4 1.3)")->check(CLI::PositiveNumber);
  sub->add_option("--min-token-agreement", o->min_token_agreement,
                  "Causal-LM logits: least share of positions whose top-1 next token equals the reference's "
                  "(default: fp32 0.99, fp16 0.95, bf16 0.9, int8/int4 0.6)")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--max-kl", o->max_kl, "Causal-LM logits: judge the mean KL divergence from the reference too")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--save-outputs", o->save_outputs, "Write each sample's outputs to DIR/<sample>/output_K.npy");
  sub->add_option("--labels", o->labels,
                  "Class labels, one per sample in sorted sample order (.npy of integers, or text: one per line); "
                  "reports top-1 accuracy of class-score outputs");
  sub->add_option("--max-top1-drop", o->max_top1_drop,
                  "With --labels: fail when the top-1 accuracy drops more than P points below the reference's")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--min-top1", o->min_top1, "With --labels: fail when the top-1 accuracy is below P percent")
      ->check(CLI::Range(0.0, 100.0));
  add_backend_flag(sub, o->backend);
  add_threads_flag(sub, o->threads);
  add_report_flag(sub, o->report, "the report");
  add_json_flag(sub, o->json, "the report");
  sub->add_flag("--per-layer", o->per_layer,
                "With --reference: compare every intermediate tensor both models share by name, rank them and "
                "suggest a quantize exclusion");
  sub->add_option("--per-layer-top", o->per_layer_top, "Rows of the per-layer table and JSON (default 20, 0 = all)");
  sub->add_option("--per-layer-exclude", o->per_layer_exclude,
                  "Most layers the suggested quantize exclusion names (default 3)");
  sub->add_option("--html", o->html,
                  "With --per-layer: also write FILE, one self-contained HTML page (verdict, per-layer SNR chart, "
                  "activation histograms with their quantization ranges and weight ranges of the worst layers, "
                  "suggested exclusion; no network access needed)");
  sub->footer(
      "Default rules depend on what is compared: fp32 allclose(atol=1e-4*max(1,max|ref|), rtol=1e-3) and\n"
      "cosine >= 0.9999, where max|ref| is the largest reference magnitude of that output in that sample\n"
      "(fp32 rounding grows with the values; a given --atol is absolute); fp16 cosine >= 0.999 and\n"
      "SNR >= 30 dB; bf16 0.995 / 20 dB; int8 0.99 / 15 dB; integer outputs exact. --labels adds top-1\n"
      "accuracy (labels: one per sample, in the samples' sorted order). Causal-LM logits (an output named\n"
      "*logits* [B,T,V] with an input_ids input) are judged by perplexity ratio and next-token agreement\n"
      "with 95% intervals; too few tokens to decide fails. Padded samples (attention_mask) are compared on\n"
      "their unmasked positions only.\n"
      "Examples:\n"
      "  mcc eval model.onnx --golden test_data_set_0\n"
      "  mcc eval model.fp16.onnx --reference model.onnx --inputs samples/\n"
      "  mcc eval model.onnx --random 0 --dim batch=1 --save-outputs outs/\n"
      "  mcc eval model.int8.onnx --reference model.onnx --inputs samples/ --per-layer --per-layer-top 10\n"
      "  mcc eval model.int8.onnx --reference model.onnx --inputs digits/ --labels labels.txt --max-top1-drop 0.5");
  sub->callback([o, &slot] { slot.set([o] { return run_eval(*o); }); });
}

}  // namespace mcc::cli
