// `mcc eval`'s terminal text (see eval_text.h).
#include "report/eval_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "io/terminal.h"
#include "judge/probability_outputs.h"

namespace mcc::report {
namespace {

std::string fmt_db(double v) {
  if (std::isinf(v)) return v > 0 ? "exact" : "-inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

}  // namespace

void print_eval_outputs(const judge::EvalOutputs& outputs) {
  const judge::VerdictRules& rules = outputs.rules();
  io::print_out("rules: %s\n", judge::describe_rules(rules).c_str());
  io::print_out("%-28s %10s %10s %10s %10s %9s %6s  %s\n", "output", "max_abs", "max_rel", "mean_abs", "cosine", "snr_db", "top1",
            "verdict");
  for (const auto& a : outputs.outputs()) {
    const judge::OutputStats& s = a.stats;
    if (s.samples == 0) continue;
    const std::string top1 = s.top1_samples ? std::to_string(100 * s.top1_agree / s.top1_samples) + "%" : "-";
    io::print_out("%-28s %10.3g %10.3g %10.3g %10.6f %9.2f %6s  %s\n", s.name.c_str(), s.max_abs, s.max_rel, s.mean_abs(),
              s.cosine_min, s.snr_min, top1.c_str(), a.failed ? "FAIL" : "pass");
  }
  for (const auto& a : outputs.outputs()) {
    const judge::OutputStats& s = a.stats;
    if (rules.row_cosine(s.name) && s.rows > 0)
      io::print_out("%-28s row cosine over %lld rows: mean %.6f, min %.6f\n", s.name.c_str(), static_cast<long long>(s.rows),
                s.row_cosine_mean(), s.row_cosine_min);
    if (s.nothing_samples > 0)
      io::print_out("%-28s %d of %d sample(s) with every probability under %g in both models: judged as agreeing\n",
                    s.name.c_str(), s.nothing_samples, s.samples, judge::kNothingProbability);
  }
  if (rules.atol_scaled) {
    std::string used;
    for (const auto& a : outputs.outputs()) {
      char v[32];
      std::snprintf(v, sizeof v, "%.3g", a.stats.atol_used);
      if (a.stats.atol_used > 0) used += (used.empty() ? "" : ", ") + a.stats.name + " " + v;
    }
    if (!used.empty()) io::print_out("allclose atol applied (largest per output): %s\n", used.c_str());
  }
}

void print_sequence_figures(const nlohmann::ordered_json& figures) {
  for (const auto& f : figures) {
    const std::string metric = f.value("metric", "");
    if (metric == "none") {
      io::print_out("%-28s not measured: %s\n", f["output"].get<std::string>().c_str(), f.value("why", "").c_str());
      continue;
    }
    std::string line = f["output"].get<std::string>() + " " + metric + " " + judge::figure_text(f["value"].get<double>()) + " " +
                       judge::interval_text(f["interval"]);
    if (metric == "perplexity_ratio")
      line += " (perplexity " + judge::figure_text(f["perplexity"].get<double>()) + " vs " + judge::figure_text(f["reference_perplexity"].get<double>()) + ")";
    const std::string verdict = f.value("verdict", "");
    if (f.contains("threshold") && f["threshold"].is_number())
      line += std::string(metric == "token_agreement" ? " >= " : " <= ") + judge::figure_text(f["threshold"].get<double>());
    line += ", " + std::to_string(f["tokens"].get<int64_t>()) + " tokens in " + std::to_string(f["samples"].get<int>()) +
            " sample(s): " + (verdict == "pass" ? "pass" : verdict == "fail" ? "FAIL" : verdict == "undecided" ? "UNDECIDED (too few tokens to tell)" : verdict);
    io::print_out("%s\n", line.c_str());
  }
}

void print_top1(const std::vector<judge::Top1Row>& rows, const judge::Top1Limits& limits, const std::string& labels_path,
                const std::string& reference) {
  std::string lim;
  if (limits.max_drop) lim += ", max drop " + judge::figure_text(*limits.max_drop) + " points";
  if (limits.min_top1) lim += ", min " + judge::figure_text(*limits.min_top1) + " %";
  io::print_out("top-1 accuracy against %s%s:\n", labels_path.c_str(), lim.c_str());
  for (const auto& r : rows) {
    io::print_out("  %-26s model %6.2f %% (%lld/%lld)", r.output.c_str(), r.accuracy(), static_cast<long long>(r.correct),
              static_cast<long long>(r.samples));
    if (r.has_reference())
      io::print_out(", %s %6.2f %% (%lld/%lld), drop %.2f points", reference.c_str(), r.reference_accuracy(),
                static_cast<long long>(r.ref_correct), static_cast<long long>(r.ref_samples), r.drop());
    io::print_out("  %s\n", r.passed ? "pass" : ("FAIL: " + r.why).c_str());
  }
}

void print_per_layer(const judge::PerLayerReport& r, size_t top) {
  size_t wv = 5, wn = 4, wr = 8;
  const size_t shown = top ? std::min(top, r.layers.size()) : r.layers.size();
  for (size_t i = 0; i < shown; ++i) {
    const auto& l = r.layers[i];
    wv = std::max(wv, l.value.size());
    wn = std::max(wn, l.node.size() + l.op.size() + 3);
    wr = std::max(wr, l.ref_node.size() + l.ref_op.size() + 3);
  }
  wv = std::min<size_t>(wv, 40), wn = std::min<size_t>(wn, 40), wr = std::min<size_t>(wr, 40);
  io::print_out("\nper-layer: %zu shared tensor(s) over %d sample(s), worst SNR first (SNR: power summed over samples;\n"
              "worst: lowest sample SNR; introduced: noise added by the layer over its worst input)\n",
              r.layers.size(), r.samples);
  io::print_out("%4s  %-*s  %-*s  %-*s %9s %9s %10s %10s %10s %5s\n", "rank", static_cast<int>(wv), "value",
              static_cast<int>(wn), "node (op)", static_cast<int>(wr), "ref node", "snr_db", "worst_db", "cosine",
              "max_abs", "intro_db", "intro");
  for (size_t i = 0; i < shown; ++i) {
    const auto& l = r.layers[i];
    const std::string node = l.node + " (" + l.op + ")" + (l.exclude_targets.empty() ? "" : " q");
    const std::string ref = l.ref_node + " (" + l.ref_op + ")";
    io::print_out("%4d  %-*.*s  %-*.*s  %-*.*s %9s %9s %10.6f %10.3g %10s %5d\n", l.rank, static_cast<int>(wv),
                static_cast<int>(wv), l.value.c_str(), static_cast<int>(wn), static_cast<int>(wn), node.c_str(),
                static_cast<int>(wr), static_cast<int>(wr), ref.c_str(), fmt_db(l.snr_db()).c_str(),
                fmt_db(l.worst_snr_db).c_str(), l.min_cosine, l.max_abs, fmt_db(l.introduced_snr_db()).c_str(),
                l.introduced_rank);
  }
  if (shown < r.layers.size()) io::print_out("(%zu more; --per-layer-top 0 lists all)\n", r.layers.size() - shown);
  for (const auto& s : r.skipped) io::print_out("not compared: %s\n", s.c_str());
  std::vector<const judge::LayerStat*> intro;
  for (const auto& l : r.layers) intro.push_back(&l);
  std::sort(intro.begin(), intro.end(), [](const judge::LayerStat* a, const judge::LayerStat* b) { return a->introduced_rank < b->introduced_rank; });
  io::print_out("where the error is introduced:");
  for (size_t i = 0; i < std::min<size_t>(5, intro.size()); ++i)
    io::print_out("%s %s (%s dB)", i ? "," : "", intro[i]->node.c_str(), fmt_db(intro[i]->introduced_snr_db()).c_str());
  io::print_out("\n");
  if (r.exclude.empty())
    io::print_out("no quantized layer stands out; no exclusion suggested\n");
  else
    io::print_out("to keep these layers in float, re-run with: %s\n", r.stage_option.c_str());
}

}  // namespace mcc::report
