// Inline SVG charts for the HTML report: a line/marker chart (per-layer SNR), a histogram with
// vertical markers (activation values and their quantization range) and per-channel range bars
// (weights). Plain SVG elements styled by the page's CSS classes; no scripts, fonts or external
// references, and no xmlns (HTML5 parses inline <svg> without it). Every string given here is
// escaped (report/html_escape.h); numbers are printed with fixed formats, so the same data gives the
// same bytes. Not a general plotting library: linear axes only (the histogram's count axis is
// log(1 + count)), one chart per call.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mcc::report::svg {

/// About `target` round-numbered ticks (steps 1, 2 or 5 x 10^k) inside [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target);

struct Point {
  double x = 0, y = 0;
  bool clipped = false;    // y was outside the axis and is drawn at its edge (hollow marker)
  bool highlight = false;  // drawn larger, in the highlight colour, with `tag` beside it
  std::string key;         // data-value attribute
  std::string tip;         // <title> tooltip
  std::string tag;         // short label next to a highlighted point
};
struct Series {
  std::string name;        // legend text
  std::string css_class;   // class of every marker ("layer-point")
  bool square = false;     // square markers (<rect>) instead of circles
  bool line = true;        // a polyline through the points
  std::vector<Point> points;
};
struct LineChart {
  std::string id, label, x_label, y_label;  // label: aria-label of the <svg>
  int width = 1100, height = 380;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  std::vector<Series> series;
  std::string highlight_legend;             // legend text for highlighted points ("" = none)
};
std::string line_chart(const LineChart& c);

struct VMarker {
  double x = 0;
  std::string css_class, label;  // label is drawn at the top of the line and as its tooltip
};
struct HistogramChart {
  std::string css_class = "histogram", label, x_label;
  int width = 540, height = 230;
  double lo = 0, hi = 1;                 // the bins cover [lo, hi] in equal steps
  std::vector<uint64_t> counts;
  std::vector<VMarker> markers;          // the x axis widens to show every marker
};
std::string histogram_chart(const HistogramChart& c);

struct RangeBar {
  double lo = 0, hi = 0;
  std::optional<double> q_lo, q_hi;      // marks drawn across the bar (quantization range)
  std::string tip;
};
struct RangeChart {
  std::string css_class = "weight-ranges", label, x_label, y_label, mark_legend;
  int width = 1100, height = 260;
  std::vector<RangeBar> bars;
};
std::string range_chart(const RangeChart& c);

}  // namespace mcc::report::svg
