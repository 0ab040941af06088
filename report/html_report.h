// One self-contained HTML page describing an accuracy comparison of a compressed model with its
// reference: the verdict and the command that reproduces it, the per-layer SNR along the graph
// (inline <svg id="snr-chart">), histograms of the reference activations of the worst layers with
// the quantization range chosen for each (<svg class="histogram">), per-channel weight ranges of
// the worst Conv/Gemm/MatMul layers (<svg class="weight-ranges">), and the suggested quantize
// exclusion. Inline CSS and SVG only: no scripts, fonts, images or links to fetch, and a
// Content-Security-Policy that forbids fetching anyway. Byte-identical for the same data (no
// dates, fixed number formats). The data is plain values, so any command that compared two
// models can fill it (see report/comparison_page.h for `mcc eval`, report/quantize_page.h for `mcc quantize`).
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "judge/per_layer.h"

namespace mcc::report {

/// One model output's verdict over all samples.
struct HtmlOutputRow {
  std::string name;
  int samples = 0, failed = 0;
  double min_cosine = 1, min_snr_db = std::numeric_limits<double>::infinity();
  std::string first_failure;
};

/// One figure of a check stage (mcc quantize's self-check, transforms/check): the verdict of a run
/// that judged the model by its budget rather than by eval's rules.
struct HtmlCheckRow {
  std::string output, metric;               // metric "none": not measured (note says why)
  std::optional<double> value, threshold;   // threshold absent: reported only
  bool lower_is_better = false;             // top1_drop_points
  int samples = 0;
  std::string verdict, note;                // pass | fail | reported | not measured
};

/// The values a QuantizeLinear can represent: [(qmin - zero_point) * scale, (qmax - zero_point) * scale].
struct HtmlQuantRange {
  std::string type;        // uint8 | int8 | uint16 | int16
  double scale = 1, zero_point = 0, lo = 0, hi = 0;
  std::string node;        // the QuantizeLinear
};

/// The reference activation values of one layer over all samples.
struct HtmlHistogram {
  std::string value, node, op;
  int rank = 0;                             // judge::LayerStat::rank
  double snr_db = 0, introduced_snr_db = 0;
  double lo = 0, hi = 0;                    // the bins cover [lo, hi] in equal steps
  std::vector<uint64_t> counts;
  uint64_t non_finite = 0;
  std::optional<HtmlQuantRange> quant;      // absent: see quant_note
  std::string quant_note;                   // "not quantized", or why no range is drawn
};

/// Per output channel min and max of one layer's fp32 weight, with the quantization range of
/// that channel when the evaluated model dequantizes the weight.
struct HtmlWeightRanges {
  std::string node, op, weight;
  int rank = 0, introduced_rank = 0;      // judge::LayerStat::rank, judge::LayerStat::introduced_rank
  int64_t axis = 0;                         // the output-channel axis of the weight
  std::vector<double> ch_min, ch_max;
  std::vector<double> q_lo, q_hi;           // empty when not quantized (see quant_note)
  std::string quant_note;                   // "per-channel int8 (axis 0): ±127 × scale", ...
};

struct HtmlReportData {
  std::string title = "mcc eval";
  std::string model, reference;             // paths as given
  std::string command;                      // shell-quoted command line that reproduces the report
  bool passed = false;
  bool undecided = false;                   // not failed, but too few samples to pass (judge/interval.h)
  std::string rules;                        // the verdict rules, described
  int samples = 0;
  std::vector<HtmlOutputRow> outputs;       // eval's rows; the table is left out when empty
  std::vector<HtmlCheckRow> checks;         // a check stage's figures; the table is left out when empty
  judge::PerLayerReport per_layer;                 // ranked (judge::rank_layers); judge::LayerStat::order gives graph order
  size_t worst = 6;                         // highlighted: the layers with rank <= worst
  std::vector<HtmlHistogram> histograms;
  std::vector<HtmlWeightRanges> weights;
};

/// The page (see the header comment).
std::string render_html_report(const HtmlReportData& d);
/// render_html_report written with write_file_atomically (UsageError when the path is unwritable).
void write_html_report(const std::string& path, const HtmlReportData& d);

}  // namespace mcc::report
