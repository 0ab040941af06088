// Inline SVG charts (see svg_chart.h). Coordinates are printed with one decimal; every text
// passes html_escape.
#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>

#include "report/html_escape.h"

namespace mcc::report::svg {
namespace {

/// Plot area inside the margins and the mapping from data to pixels.
struct Frame {
  int width, height;
  double left = 64, right = 24, top = 34, bottom = 50;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  double px(double x) const { return left + (x - x_lo) / (x_hi - x_lo) * (width - left - right); }
  double py(double y) const { return height - bottom - (y - y_lo) / (y_hi - y_lo) * (height - top - bottom); }
  double plot_left() const { return left; }
  double plot_right() const { return width - right; }
  double plot_top() const { return top; }
  double plot_bottom() const { return height - bottom; }
};

void widen(double& lo, double& hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    const double d = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= d;
    hi += d;
  }
}

std::string open_svg(const std::string& attr_name, const std::string& attr_value, int w, int h, const std::string& label) {
  return "<svg " + attr_name + "=\"" + html_escape(attr_value) + "\" viewBox=\"0 0 " + std::to_string(w) + " " +
         std::to_string(h) + "\" width=\"" + std::to_string(w) + "\" height=\"" + std::to_string(h) +
         "\" role=\"img\" aria-label=\"" + html_escape(label) + "\">\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& cls) {
  return "<line class=\"" + cls + "\" x1=\"" + fmt_f(x1) + "\" y1=\"" + fmt_f(y1) + "\" x2=\"" + fmt_f(x2) +
         "\" y2=\"" + fmt_f(y2) + "\"/>";
}

std::string text(double x, double y, const std::string& cls, const std::string& anchor, const std::string& body,
                 const std::string& extra = "") {
  return "<text class=\"" + cls + "\" x=\"" + fmt_f(x) + "\" y=\"" + fmt_f(y) + "\" text-anchor=\"" + anchor + "\"" +
         extra + ">" + html_escape(body) + "</text>";
}

/// Plot border, grid lines and tick labels on both axes, and the axis titles.
std::string axes(const Frame& f, const std::vector<double>& xt, const std::vector<double>& yt, const std::string& x_label,
                 const std::string& y_label, const std::vector<std::string>& y_tick_text = {}) {
  std::string s = "<g class=\"axes\">\n";
  for (size_t i = 0; i < yt.size(); ++i) {
    const double y = f.py(yt[i]);
    s += line(f.plot_left(), y, f.plot_right(), y, "grid") + line(f.plot_left() - 5, y, f.plot_left(), y, "tick") +
         text(f.plot_left() - 8, y + 4, "tick-label", "end", i < y_tick_text.size() ? y_tick_text[i] : fmt_g(yt[i], 4)) + "\n";
  }
  for (double x : xt) {
    const double px = f.px(x);
    s += line(px, f.plot_bottom(), px, f.plot_bottom() + 5, "tick") +
         text(px, f.plot_bottom() + 18, "tick-label", "middle", fmt_g(x, 4)) + "\n";
  }
  s += line(f.plot_left(), f.plot_bottom(), f.plot_right(), f.plot_bottom(), "axis") + "\n";
  s += line(f.plot_left(), f.plot_top(), f.plot_left(), f.plot_bottom(), "axis") + "\n";
  s += text((f.plot_left() + f.plot_right()) / 2, f.height - 10, "axis-label", "middle", x_label) + "\n";
  const double ym = (f.plot_top() + f.plot_bottom()) / 2;
  s += text(16, ym, "axis-label", "middle", y_label, " transform=\"rotate(-90 16 " + fmt_f(ym) + ")\"") + "\n";
  return s + "</g>\n";
}

std::string marker(const Series& se, const Point& p, double x, double y) {
  std::string cls = se.css_class + (p.highlight ? " worst" : "") + (p.clipped ? " clipped" : "");
  const double r = p.highlight ? 5.5 : 3.5;
  std::string s;
  if (se.square)
    s = "<rect class=\"" + cls + "\" x=\"" + fmt_f(x - r) + "\" y=\"" + fmt_f(y - r) + "\" width=\"" + fmt_f(2 * r) +
        "\" height=\"" + fmt_f(2 * r) + "\"";
  else
    s = "<circle class=\"" + cls + "\" cx=\"" + fmt_f(x) + "\" cy=\"" + fmt_f(y) + "\" r=\"" + fmt_f(r) + "\"";
  s += " data-value=\"" + html_escape(p.key) + "\"><title>" + html_escape(p.tip) + "</title>";
  return s + (se.square ? "</rect>" : "</circle>");
}

std::string legend_entry(double x, double y, const std::string& swatch_class, bool square, const std::string& label) {
  std::string s = square ? "<rect class=\"" + swatch_class + "\" x=\"" + fmt_f(x - 4) + "\" y=\"" + fmt_f(y - 4) +
                               "\" width=\"8\" height=\"8\"/>"
                         : "<circle class=\"" + swatch_class + "\" cx=\"" + fmt_f(x) + "\" cy=\"" + fmt_f(y) + "\" r=\"4\"/>";
  return s + text(x + 9, y + 4, "legend-label", "start", label);
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  widen(lo, hi);
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag * (1 + 1e-9)) { step = m * mag; break; }
  std::vector<double> out;
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (int i = 0; i < 1000; ++i) {
    const double t = first + i * step;
    if (t > hi + step * 1e-9) break;
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

std::string line_chart(const LineChart& c) {
  Frame f{c.width, c.height};
  f.x_lo = c.x_lo, f.x_hi = c.x_hi, f.y_lo = c.y_lo, f.y_hi = c.y_hi;
  widen(f.x_lo, f.x_hi);
  widen(f.y_lo, f.y_hi);
  // Integer x (layer positions): no fractional ticks.
  std::vector<double> xt;
  for (double t : nice_ticks(f.x_lo, f.x_hi, 12))
    if (t == std::floor(t)) xt.push_back(t);
  std::string s = open_svg("id", c.id, c.width, c.height, c.label);
  s += axes(f, xt, nice_ticks(f.y_lo, f.y_hi, 6), c.x_label, c.y_label);
  for (const auto& se : c.series) {
    if (!se.line) continue;
    std::string pts;
    for (const auto& p : se.points) {
      if (!pts.empty()) pts += ' ';
      pts += fmt_f(f.px(p.x));
      pts += ',';
      pts += fmt_f(f.py(p.y));
    }
    s += "<polyline class=\"series-line " + se.css_class + "-line\" points=\"" + pts + "\"/>\n";
  }
  for (const auto& se : c.series) {
    s += "<g class=\"series " + se.css_class + "-series\">\n";
    for (const auto& p : se.points) s += marker(se, p, f.px(p.x), f.py(p.y)) + "\n";
    s += "</g>\n";
  }
  for (const auto& se : c.series)
    for (const auto& p : se.points)
      if (p.highlight && !p.tag.empty()) s += text(f.px(p.x), f.py(p.y) - 9, "point-tag", "middle", p.tag) + "\n";
  // Legend along the top edge.
  double lx = f.plot_left() + 8;
  for (const auto& se : c.series) {
    s += legend_entry(lx, 14, "legend-swatch " + se.css_class + "-swatch", se.square, se.name) + "\n";
    lx += 30 + 7.0 * se.name.size();
  }
  if (!c.highlight_legend.empty()) s += legend_entry(lx, 14, "legend-swatch worst-swatch", false, c.highlight_legend) + "\n";
  return s + "</svg>\n";
}

std::string histogram_chart(const HistogramChart& c) {
  Frame f{c.width, c.height};
  f.left = 58;
  double lo = c.lo, hi = c.hi;
  widen(lo, hi);
  double x_lo = lo, x_hi = hi;
  for (const auto& m : c.markers)
    if (std::isfinite(m.x)) x_lo = std::min(x_lo, m.x), x_hi = std::max(x_hi, m.x);
  const double pad = (x_hi - x_lo) * 0.03;
  f.x_lo = x_lo - pad, f.x_hi = x_hi + pad;
  uint64_t peak = 1;
  for (auto n : c.counts) peak = std::max(peak, n);
  // Count axis: log10(1 + count), so a spike (ReLU's zeros) does not flatten every other bin.
  f.y_lo = 0, f.y_hi = std::log10(1.0 + static_cast<double>(peak)) * 1.08;
  std::vector<double> yt;
  std::vector<std::string> yt_text;
  for (double p = 1; p <= static_cast<double>(peak); p *= 10) {
    yt.push_back(std::log10(1.0 + p));
    yt_text.push_back(fmt_g(p, 6));
  }
  std::string s = open_svg("class", c.css_class, c.width, c.height, c.label);
  s += axes(f, nice_ticks(f.x_lo, f.x_hi, 6), yt, c.x_label, "count (log)", yt_text);
  const size_t n = c.counts.size();
  const double w = (hi - lo) / static_cast<double>(std::max<size_t>(1, n));
  s += "<g class=\"bins\">\n";
  for (size_t i = 0; i < n; ++i) {
    if (c.counts[i] == 0) continue;
    const double a = lo + w * static_cast<double>(i), b = a + w;
    const double x0 = f.px(a), x1 = std::max(f.px(b), x0 + 0.6);
    const double y = f.py(std::log10(1.0 + static_cast<double>(c.counts[i])));
    s += "<rect class=\"bin\" x=\"" + fmt_f(x0) + "\" y=\"" + fmt_f(y) + "\" width=\"" + fmt_f(x1 - x0, 2) +
         "\" height=\"" + fmt_f(f.plot_bottom() - y) + "\"><title>[" + fmt_g(a, 5) + ", " + fmt_g(b, 5) + "): " +
         std::to_string(c.counts[i]) + "</title></rect>\n";
  }
  s += "</g>\n";
  for (size_t i = 0; i < c.markers.size(); ++i) {
    const auto& m = c.markers[i];
    if (!std::isfinite(m.x)) continue;
    const double x = f.px(m.x);
    s += "<g class=\"marker\">" + line(x, f.plot_top() - 4, x, f.plot_bottom(), m.css_class) + "<title>" +
         html_escape(m.label) + "</title>" +
         text(x, f.plot_top() - 8 - 11.0 * static_cast<double>(i % 2), "marker-label", i % 2 ? "start" : "end", m.label) +
         "</g>\n";
  }
  return s + "</svg>\n";
}

std::string range_chart(const RangeChart& c) {
  Frame f{c.width, c.height};
  const size_t n = c.bars.size();
  double lo = 0, hi = 0;
  for (const auto& b : c.bars) {
    lo = std::min({lo, b.lo, b.q_lo.value_or(lo)});
    hi = std::max({hi, b.hi, b.q_hi.value_or(hi)});
  }
  widen(lo, hi);
  const double pad = (hi - lo) * 0.05;
  f.x_lo = -0.5, f.x_hi = static_cast<double>(std::max<size_t>(1, n)) - 0.5;
  f.y_lo = lo - pad, f.y_hi = hi + pad;
  std::vector<double> xt;
  for (double t : nice_ticks(0, static_cast<double>(std::max<size_t>(1, n) - 1), 12))
    if (t == std::floor(t)) xt.push_back(t);
  std::string s = open_svg("class", c.css_class, c.width, c.height, c.label);
  s += axes(f, xt, nice_ticks(f.y_lo, f.y_hi, 6), c.x_label, c.y_label);
  s += line(f.plot_left(), f.py(0), f.plot_right(), f.py(0), "zero") + "\n";
  const double band = (f.plot_right() - f.plot_left()) / static_cast<double>(std::max<size_t>(1, n));
  const double bw = std::max(0.8, band * 0.7);
  for (size_t i = 0; i < n; ++i) {
    const auto& b = c.bars[i];
    const double x = f.px(static_cast<double>(i));
    const double y0 = f.py(b.hi), y1 = std::max(f.py(b.lo), y0 + 0.8);
    s += "<g class=\"channel\"><title>" + html_escape(b.tip) + "</title><rect class=\"wrange\" x=\"" + fmt_f(x - bw / 2, 2) +
         "\" y=\"" + fmt_f(y0) + "\" width=\"" + fmt_f(bw, 2) + "\" height=\"" + fmt_f(y1 - y0) + "\"/>";
    const double mw = std::max(2.0, band * 0.9);
    if (b.q_lo) s += line(x - mw / 2, f.py(*b.q_lo), x + mw / 2, f.py(*b.q_lo), "qscale");
    if (b.q_hi) s += line(x - mw / 2, f.py(*b.q_hi), x + mw / 2, f.py(*b.q_hi), "qscale");
    s += "</g>\n";
  }
  s += "<rect class=\"legend-swatch wrange-swatch\" x=\"" + fmt_f(f.plot_left() + 8) + "\" y=\"10\" width=\"8\" height=\"8\"/>" +
       text(f.plot_left() + 20, 18, "legend-label", "start", "weight min..max per channel");
  if (!c.mark_legend.empty())
    s += line(f.plot_left() + 230, 14, f.plot_left() + 246, 14, "legend-swatch qscale-swatch") +
         text(f.plot_left() + 252, 18, "legend-label", "start", c.mark_legend);
  return s + "\n</svg>\n";
}

}  // namespace mcc::report::svg
