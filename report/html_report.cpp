// The self-contained HTML report (see html_report.h): page layout, tables and the mapping from the
// report data to the charts of report/svg_chart.
#include "report/html_report.h"

#include <algorithm>
#include <cmath>

#include "io/files.h"
#include "report/html_escape.h"
#include "report/svg_chart.h"

namespace mcc::report {
namespace {

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330; margin: 24px 32px; max-width: 1180px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #d8dde6; }
h3 { font-size: 15px; margin: 14px 0 6px; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
pre { background: #f3f5f8; border: 1px solid #d8dde6; padding: 8px 10px; white-space: pre-wrap; word-break: break-all; }
.verdict { display: inline-block; font-weight: 700; font-size: 20px; padding: 2px 14px; border-radius: 4px; color: #fff; }
.verdict.pass { background: #2e7d32; } .verdict.fail { background: #c62828; } .verdict.undecided { background: #8d6e00; }
table { border-collapse: collapse; margin: 6px 0; } th, td { border: 1px solid #d8dde6; padding: 3px 8px; text-align: left; }
th { background: #f3f5f8; } td.num { text-align: right; font-variant-numeric: tabular-nums; } tr.failed td { color: #c62828; }
.muted { color: #5b6475; }
svg { display: block; background: #fff; border: 1px solid #e3e7ee; margin: 6px 0; }
svg .grid { stroke: #eceff4; } svg .axis, svg .tick { stroke: #5b6475; } svg .zero { stroke: #9aa3b2; stroke-dasharray: 3 3; }
svg text { font: 11px system-ui, sans-serif; fill: #1d2330; } svg .axis-label { font-size: 12px; fill: #5b6475; }
svg .series-line { fill: none; stroke-width: 1.2; } svg .layer-point-line { stroke: #1f5fbf; }
svg .layer-point, svg .layer-point-swatch { fill: #1f5fbf; } svg .intro-point, svg .intro-point-swatch { fill: #e08a00; fill-opacity: 0.85; }
svg .clipped { fill: #fff; stroke-width: 1.5; } svg .layer-point.clipped { stroke: #1f5fbf; } svg .intro-point.clipped { stroke: #e08a00; }
svg .worst, svg .worst-swatch { fill: #d32f2f; stroke: #7f0000; stroke-width: 1.2; }
svg .point-tag { font-weight: 700; fill: #b71c1c; }
svg .bin { fill: #5b8fd6; } svg .qrange { stroke: #d32f2f; stroke-width: 2; } svg .marker-label { fill: #b71c1c; }
svg .wrange, svg .wrange-swatch { fill: #7aa6e0; } svg .qscale, svg .qscale-swatch { stroke: #d32f2f; stroke-width: 1.5; }
figure { margin: 10px 0 18px; } figcaption { font-weight: 600; }
.histograms { display: flex; flex-wrap: wrap; gap: 0 18px; } .histograms figure { width: 540px; }
)css";

std::string td_num(double v, int digits = 4) { return "<td class=\"num\">" + fmt_g(v, digits) + "</td>"; }
std::string td(const std::string& s) { return "<td>" + html_escape(s) + "</td>"; }
std::string db(double v) { return std::isinf(v) ? (v > 0 ? "exact" : "-inf") : fmt_g(v, 4); }
std::string td_db(double v) { return "<td class=\"num\">" + db(v) + "</td>"; }

std::string verdict_section(const HtmlReportData& d) {
  std::string s = "<section id=\"verdict\">\n<h2>Verdict</h2>\n";
  s += std::string("<p><span class=\"verdict ") +
       (d.passed ? "pass\">PASS" : d.undecided ? "undecided\">UNDECIDED" : "fail\">FAIL") + "</span> " +
       std::to_string(d.samples) + " sample(s)</p>\n";
  s += "<p>Rules: <code id=\"rules\">" + html_escape(d.rules) + "</code></p>\n";
  if (!d.outputs.empty()) {
    s += "<table id=\"outputs\"><tr><th>output</th><th>samples</th><th>failed</th><th>min cosine</th>"
         "<th>min SNR (dB)</th><th>verdict</th><th>first failure</th></tr>\n";
    for (const auto& o : d.outputs)
      s += std::string("<tr") + (o.failed ? " class=\"failed\"" : "") + ">" + td(o.name) + td_num(o.samples) +
           td_num(o.failed) + td_num(o.min_cosine, 6) + td_db(o.min_snr_db) + td(o.failed ? "FAIL" : "pass") +
           td(o.first_failure) + "</tr>\n";
    s += "</table>\n";
  }
  if (!d.checks.empty()) {
    s += "<table id=\"checks\"><tr><th>output</th><th>metric</th><th>value</th><th>threshold</th><th>samples</th>"
         "<th>verdict</th><th>note</th></tr>\n";
    for (const auto& c : d.checks)
      s += std::string("<tr") + (c.verdict == "fail" ? " class=\"failed\"" : "") + ">" + td(c.output) + td(c.metric) +
           (c.value ? td_num(*c.value, 6) : td("-")) +
           td(c.threshold ? (c.lower_is_better ? "<= " : ">= ") + fmt_g(*c.threshold, 6) : "-") + td_num(c.samples) +
           td(c.verdict) + td(c.note) + "</tr>\n";
    s += "</table>\n";
  }
  s += "<h3>Reproduce</h3>\n<pre id=\"command\">" + html_escape(d.command) + "</pre>\n</section>\n";
  return s;
}

/// Pooled and introduced SNR per layer, in graph order.
std::string snr_chart(const HtmlReportData& d) {
  std::vector<const judge::LayerStat*> by_order;
  for (const auto& l : d.per_layer.layers) by_order.push_back(&l);
  std::stable_sort(by_order.begin(), by_order.end(), [](const judge::LayerStat* a, const judge::LayerStat* b) {
    return a->order != b->order ? a->order < b->order : a->value < b->value;
  });
  double lo = 0, top = 40;
  for (const auto* l : by_order) {
    for (double v : {l->snr_db(), l->introduced_snr_db()})
      if (std::isfinite(v)) lo = std::min(lo, v);
    if (std::isfinite(l->snr_db())) top = std::max(top, l->snr_db());
  }
  lo = std::floor(lo / 10) * 10;
  const double hi = std::ceil(top / 10) * 10 + 10;  // introduced SNR above this is drawn at the edge
  svg::LineChart c;
  c.id = "snr-chart";
  c.label = "per-layer SNR in graph order";
  c.x_label = "layer (position in the evaluated model's graph order)";
  c.y_label = "SNR (dB)";
  c.x_lo = 0.5, c.x_hi = std::max<double>(2, static_cast<double>(by_order.size())) + 0.5;  // markers clear the axis
  c.y_lo = lo, c.y_hi = hi;
  c.highlight_legend = "worst " + std::to_string(std::min(d.worst, by_order.size())) + " layers";
  // Introduced SNR as markers only: a line through it zigzags between exact and noisy layers.
  svg::Series pooled{"SNR (dB)", "layer-point", false, true, {}}, intro{"introduced SNR (dB)", "intro-point", true, false, {}};
  for (size_t i = 0; i < by_order.size(); ++i) {
    const judge::LayerStat& l = *by_order[i];
    const bool worst = static_cast<size_t>(l.rank) <= d.worst;
    const std::string tip = "#" + std::to_string(i + 1) + " " + l.value + " - " + l.node + " (" + l.op + "): SNR " +
                            db(l.snr_db()) + " dB, introduced " + db(l.introduced_snr_db()) + " dB, rank " +
                            std::to_string(l.rank);
    auto point = [&](double v) {
      svg::Point p;
      p.x = static_cast<double>(i + 1);
      p.y = std::clamp(std::isnan(v) ? lo : v, lo, hi);
      p.clipped = !(v >= lo && v <= hi);
      p.key = l.value;
      p.tip = tip;
      return p;
    };
    svg::Point p = point(l.snr_db());
    p.highlight = worst;
    p.tag = std::to_string(l.rank);
    pooled.points.push_back(p);
    intro.points.push_back(point(l.introduced_snr_db()));
  }
  c.series = {intro, pooled};  // pooled last: drawn on top
  return svg::line_chart(c);
}

std::string per_layer_section(const HtmlReportData& d) {
  const auto& r = d.per_layer;
  std::string s = "<section id=\"per-layer\">\n<h2>Per-layer SNR</h2>\n";
  s += "<p class=\"muted\">" + std::to_string(r.layers.size()) +
       " tensor(s) both models compute under the same name, over " + std::to_string(r.samples) +
       " sample(s). SNR: signal and noise power summed over samples; introduced: the noise a layer adds over "
       "its worst input (a layer that quantizes badly has a low introduced SNR; the layers after it inherit "
       "its error). Hollow markers lie beyond the axis (exact layers at the top). Numbers on red markers "
       "are ranks by SNR.</p>\n";
  s += snr_chart(d);
  s += "<table id=\"worst-layers\"><tr><th>rank</th><th>value</th><th>node (op)</th><th>SNR (dB)</th>"
       "<th>worst sample (dB)</th><th>introduced (dB)</th><th>min cosine</th><th>max abs</th></tr>\n";
  for (const auto& l : r.layers) {
    if (static_cast<size_t>(l.rank) > d.worst) break;
    s += "<tr>" + td_num(l.rank) + td(l.value) + td(l.node + " (" + l.op + ")" + (l.exclude_targets.empty() ? "" : " q")) +
         td_db(l.snr_db()) + td_db(l.worst_snr_db) + td_db(l.introduced_snr_db()) + td_num(l.min_cosine, 6) +
         td_num(l.max_abs) + "</tr>\n";
  }
  s += "</table>\n";
  for (const auto& k : r.skipped) s += "<p class=\"muted\">not compared: " + html_escape(k) + "</p>\n";
  return s + "</section>\n";
}

std::string histogram_figure(const HtmlHistogram& h) {
  svg::HistogramChart c;
  c.label = "reference values of " + h.value;
  c.x_label = "reference (fp32) value";
  c.lo = h.lo, c.hi = h.hi;
  c.counts = h.counts;
  std::string note = h.quant_note;
  if (h.quant) {
    const auto& q = *h.quant;
    c.markers = {{q.lo, "qrange qmin", "q min " + fmt_g(q.lo, 4)}, {q.hi, "qrange qmax", "q max " + fmt_g(q.hi, 4)}};
    note = q.type + ", scale " + fmt_g(q.scale, 6) + ", zero point " + fmt_g(q.zero_point, 6) + ": representable [" +
           fmt_g(q.lo, 6) + ", " + fmt_g(q.hi, 6) + "] (QuantizeLinear " + q.node + ")";
  }
  uint64_t total = h.non_finite;
  for (auto n : h.counts) total += n;
  std::string s = "<figure class=\"activation\" data-value=\"" + html_escape(h.value) + "\">\n<figcaption>#" +
                  std::to_string(h.rank) + " " + html_escape(h.value) + " <span class=\"muted\">" +
                  html_escape(h.node + " (" + h.op + "), SNR " + db(h.snr_db) + " dB, introduced " +
                              db(h.introduced_snr_db) + " dB") +
                  "</span></figcaption>\n";
  s += svg::histogram_chart(c);
  s += "<p class=\"quant\">" + html_escape("values [" + fmt_g(h.lo, 6) + ", " + fmt_g(h.hi, 6) + "], " +
                                           std::to_string(total) + " in all" +
                                           (h.non_finite ? ", " + std::to_string(h.non_finite) + " NaN/Inf" : "") +
                                           "; quantization: " + note) +
       "</p>\n</figure>\n";
  return s;
}

std::string weight_figure(const HtmlWeightRanges& w) {
  svg::RangeChart c;
  c.label = "weight ranges of " + w.node;
  c.x_label = "output channel (axis " + std::to_string(w.axis) + " of " + w.weight + ")";
  c.y_label = "weight";
  const bool q = !w.q_lo.empty();
  if (q) c.mark_legend = "quantization range per channel";
  for (size_t i = 0; i < w.ch_min.size(); ++i) {
    svg::RangeBar b{w.ch_min[i], w.ch_max[i], {}, {}, {}};
    b.tip = "channel " + std::to_string(i) + ": [" + fmt_g(w.ch_min[i], 5) + ", " + fmt_g(w.ch_max[i], 5) + "]";
    if (q && i < w.q_lo.size()) {
      b.q_lo = w.q_lo[i], b.q_hi = w.q_hi[i];
      b.tip += ", quantized range [" + fmt_g(w.q_lo[i], 5) + ", " + fmt_g(w.q_hi[i], 5) + "]";
    }
    c.bars.push_back(std::move(b));
  }
  std::string s = "<figure class=\"weights\" data-node=\"" + html_escape(w.node) + "\">\n<figcaption>#" +
                  std::to_string(w.rank) + " " + html_escape(w.node + " (" + w.op + ")") + " <span class=\"muted\">" +
                  html_escape("weight " + w.weight + ", " + std::to_string(w.ch_min.size()) + " channel(s), rank " +
                              std::to_string(w.rank) + " by SNR, " + std::to_string(w.introduced_rank) +
                              " by introduced error") +
                  "</span></figcaption>\n";
  s += svg::range_chart(c);
  return s + "<p class=\"quant\">quantization: " + html_escape(w.quant_note) + "</p>\n</figure>\n";
}

std::string suggestion_section(const HtmlReportData& d) {
  std::string s = "<section id=\"suggestion\">\n<h2>Suggested exclusion</h2>\n";
  if (d.per_layer.stage_option.empty())
    return s + "<p id=\"no-exclusion\">No quantized layer stands out; no exclusion suggested.</p>\n</section>\n";
  s += "<p>To keep these layers in float, re-run the quantize stage with:</p>\n<pre id=\"stage-option\">" +
       html_escape(d.per_layer.stage_option) + "</pre>\n";
  return s + "</section>\n";
}

}  // namespace

std::string render_html_report(const HtmlReportData& d) {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // Nothing on this page may be fetched: inline styles only.
  s += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n";
  s += "<title>" + html_escape(d.title + ": " + d.model) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  s += "<h1>" + html_escape(d.title) + "</h1>\n<p class=\"muted\">" + html_escape(d.model) + " compared with " +
       html_escape(d.reference) + "</p>\n";
  s += verdict_section(d);
  s += per_layer_section(d);
  s += "<section id=\"histograms\">\n<h2>Activations of the worst layers</h2>\n<p class=\"muted\">Reference (fp32) "
       "values over all samples; red lines: the range the evaluated model's QuantizeLinear can represent for "
       "that tensor. Values outside it are clipped; a range much wider than the values wastes resolution.</p>\n"
       "<div class=\"histograms\">\n";
  for (const auto& h : d.histograms) s += histogram_figure(h);
  s += "</div>\n</section>\n<section id=\"weights\">\n<h2>Weight ranges of the worst layers</h2>\n";
  if (d.weights.empty())
    s += "<p class=\"muted\">None of the worst layers (by SNR or by introduced error) is a Conv, Gemm or MatMul "
         "with a constant weight.</p>\n";
  else
    s += "<p class=\"muted\">Per output channel min and max of the reference (fp32) weight; red marks: the range "
         "the evaluated model's quantization scale of that channel (or of the whole tensor) represents. A channel "
         "far smaller than its marks loses precision.</p>\n";
  for (const auto& w : d.weights) s += weight_figure(w);
  s += "</section>\n";
  s += suggestion_section(d);
  return s + "</body>\n</html>\n";
}

void write_html_report(const std::string& path, const HtmlReportData& d) {
  io::write_file_atomically(path, render_html_report(d));
}

}  // namespace mcc::report
