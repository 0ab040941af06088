// Builds the HTML report of `mcc eval --per-layer --html` (see eval_html.h).
#include "report/comparison_page.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/activation_histogram.h"
#include "io/command_line.h"
#include "io/files.h"
#include "report/html_escape.h"
#include "report/quant_ranges.h"

namespace mcc::report {
namespace {

/// JSON reports write +-inf as +-1e308 (json_num); back to infinities for the page.
double from_json(const nlohmann::ordered_json& v, double def) {
  if (!v.is_number()) return def;
  const double x = v.get<double>();
  if (x >= 1e308) return std::numeric_limits<double>::infinity();
  if (x <= -1e308) return -std::numeric_limits<double>::infinity();
  return x;
}

std::string str(const nlohmann::ordered_json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

}  // namespace

HtmlReportData eval_html_data(const EvalHtmlInput& in) {
  const auto& j = in.report;
  HtmlReportData d;
  d.title = "mcc eval";
  d.model = str(j, "model");
  d.reference = str(j, "source");
  d.rules = str(j, "rules");
  d.passed = j.value("passed", false);
  d.undecided = j.value("undecided", false);
  d.samples = j.contains("samples") && j["samples"].is_number() ? j["samples"].get<int>() : in.per_layer.samples;
  d.command = io::command_line().empty() ? "(command line not recorded)" : io::shell_command(io::command_line());
  if (j.contains("outputs"))
    for (const auto& o : j["outputs"]) {
      HtmlOutputRow r;
      r.name = str(o, "name");
      r.samples = o.value("samples", 0);
      r.failed = o.value("failed", 0);
      r.min_cosine = from_json(o.value("min_cosine", nlohmann::ordered_json()), 1);
      r.min_snr_db = from_json(o.value("min_snr_db", nlohmann::ordered_json()), std::numeric_limits<double>::infinity());
      r.first_failure = str(o, "first_failure");
      d.outputs.push_back(std::move(r));
    }
  if (j.contains("checks"))
    for (const auto& c : j["checks"]) {
      HtmlCheckRow r;
      r.output = str(c, "output");
      r.metric = str(c, "metric");
      if (c.contains("value") && c["value"].is_number()) r.value = c["value"].get<double>();
      if (c.contains("threshold") && c["threshold"].is_number()) r.threshold = c["threshold"].get<double>();
      r.lower_is_better = r.metric == "top1_drop_points";
      r.samples = c.value("samples", 0);
      r.verdict = str(c, "verdict");
      r.note = str(c, "why");
      if (c.contains("worst_sample_cosine")) r.note = "worst sample " + fmt_g(c["worst_sample_cosine"].get<double>(), 6);
      if (c.contains("top1") && c.contains("reference_top1"))
        r.note = "top-1 " + fmt_g(c["top1"].get<double>(), 6) + " % vs " + fmt_g(c["reference_top1"].get<double>(), 6) +
                 " % for the reference";
      d.checks.push_back(std::move(r));
    }
  d.per_layer = in.per_layer;
  d.worst = in.worst;

  // The worst layers (ranked worst SNR first): histograms of their reference values.
  std::vector<const judge::LayerStat*> worst;
  for (const auto& l : in.per_layer.layers)
    if (worst.size() < in.worst) worst.push_back(&l);
  std::vector<ValueHistogram> ranges;
  for (const auto* l : worst)
    if (l->ref_min <= l->ref_max) ranges.push_back({l->value, l->ref_min, l->ref_max, {}, 0});
  std::vector<ValueHistogram> counted;
  if (!ranges.empty()) {
    ActivationHistograms hist(in.reference, ranges, in.bins);
    hist.attach(in.reference_exec);
    in.for_each_sample([&](const io::SampleFeeds& feeds) { in.reference_exec.run(feeds); });
    counted = hist.histograms();
  }
  for (const auto* l : worst) {
    HtmlHistogram h;
    h.value = l->value, h.node = l->node, h.op = l->op, h.rank = l->rank;
    h.snr_db = l->snr_db(), h.introduced_snr_db = l->introduced_snr_db();
    for (const auto& c : counted)
      if (c.value == l->value) h.lo = c.lo, h.hi = c.hi, h.counts = c.counts, h.non_finite = c.non_finite;
    h.quant = activation_quant_range(in.model, l->value, h.quant_note);
    if (h.counts.empty()) h.quant_note = "no finite reference values; " + h.quant_note;
    d.histograms.push_back(std::move(h));
  }
  // Weights: the Conv/Gemm/MatMul layers among the worst by SNR or by introduced error (a layer
  // whose own weights quantize badly introduces the error), most introduced error first.
  std::vector<const judge::LayerStat*> weighted;
  for (const auto& l : in.per_layer.layers)
    if (static_cast<size_t>(l.rank) <= in.worst || static_cast<size_t>(l.introduced_rank) <= in.worst) weighted.push_back(&l);
  std::stable_sort(weighted.begin(), weighted.end(),
                   [](const judge::LayerStat* a, const judge::LayerStat* b) { return a->introduced_rank < b->introduced_rank; });
  for (const auto* l : weighted)
    if (auto w = weight_ranges(in.model, in.reference, *l)) d.weights.push_back(std::move(*w));
  return d;
}

void write_eval_html(const std::string& path, const EvalHtmlInput& in) { write_html_report(path, eval_html_data(in)); }

void write_comparison_html(const std::string& path, const ComparisonHtmlInput& in) {
  const io::InputModel model = io::load_input_model(in.model, false, false);
  const io::InputModel reference = io::load_input_model(in.reference, false, false);
  backends::ExecOptions eopts;
  eopts.threads = in.threads;
  backends::Executor exec(model.model, eopts), reference_exec(reference.model, eopts);
  judge::PerLayerComparator compare(model.model, reference.model);
  compare.attach(exec, reference_exec);
  const ir::Graph& g = *model.model.graph;
  const ForEachSample each_sample = [&](const std::function<void(const io::SampleFeeds&)>& visit) {
    for (const auto& dir : in.sample_dirs) {
      ir::BoundSample s = ir::bind_sample(g, ir::load_sample(dir, false), true);
      visit(io::to_feeds(s));
    }
  };
  each_sample([&](const io::SampleFeeds& feeds) {
    exec.run(feeds);
    reference_exec.run(feeds);
    compare.end_sample();
  });
  const judge::PerLayerReport layers = compare.finish(3);
  HtmlReportData d = eval_html_data({in.verdict, layers, model.model, reference.model, reference_exec, each_sample});
  d.title = in.title;
  write_html_report(path, d);
}

}  // namespace mcc::report
