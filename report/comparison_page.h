// `mcc eval --per-layer --html FILE`: fills the HTML report (report/html_report.h) from what eval
// computed (its JSON report and the per-layer report) and from a second pass over the samples
// that histograms the reference activations of the worst layers (report/activation_histogram.h).
// Worst layers: the `worst` lowest by SNR (LayerStat::rank) get histograms; weight ranges are
// drawn for the Conv/Gemm/MatMul layers among those and among the `worst` highest by introduced
// error (LayerStat::introduced_rank), since a layer's own weights show in its introduced error.
// The second pass runs the reference model once more per sample; nothing runs when no layer has
// finite reference values.
// write_comparison_html is the same page for a command that did not compare the models itself
// (mcc quantize): it loads both model files and runs them on folders of input samples.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/executor.h"
#include "io/samples.h"
#include "report/html_report.h"
#include "judge/per_layer.h"

namespace mcc::report {

/// Calls its argument with the feeds of every sample, in order (the samples eval compared).
using ForEachSample = std::function<void(const std::function<void(const io::SampleFeeds&)>&)>;

struct EvalHtmlInput {
  const nlohmann::ordered_json& report;  // eval's JSON report: model, source, rules, samples, outputs, passed;
                                         // or "checks": a check stage's figures (transforms/check)
  const judge::PerLayerReport& per_layer;
  const ir::Model& model;                // the evaluated model
  const ir::Model& reference;
  backends::Executor& reference_exec;    // an executor of `reference` (its observer is replaced)
  ForEachSample for_each_sample;
  size_t worst = 6;                      // layers with histograms (and weights) by SNR rank
  size_t bins = 64;
};

HtmlReportData eval_html_data(const EvalHtmlInput& in);
/// eval_html_data written to `path` (atomically).
void write_eval_html(const std::string& path, const EvalHtmlInput& in);

struct ComparisonHtmlInput {
  std::string title;                      // the page's heading, e.g. "mcc quantize"
  std::string model, reference;           // model files: the compared one and its reference
  std::vector<std::string> sample_dirs;   // input samples (ONNX test-data or NumPy layout)
  int threads = 0;                        // CPU backend threads (0: the default)
  nlohmann::ordered_json verdict;         // as EvalHtmlInput::report
};
/// Runs `model` then `reference` on every sample with the per-layer comparator attached, and
/// writes the page of eval_html_data (the histograms run the reference once more per sample).
/// UsageError when the models share no intermediate tensor.
void write_comparison_html(const std::string& path, const ComparisonHtmlInput& in);

}  // namespace mcc::report
