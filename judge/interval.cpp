// 95 % intervals and the three-way budget decision (see interval.h).
#include "judge/interval.h"

#include "judge/output_stats.h"

#include <cmath>
#include <limits>

namespace mcc::judge {
namespace {
constexpr double kZ = 1.959963984540054;  // two-sided 95 %
}

Interval MeanAccumulator::interval() const {
  const double inf = std::numeric_limits<double>::infinity();
  if (n < 2) return {-inf, inf};
  const double m = mean();
  const double var = std::max(0.0, (sum_sq - static_cast<double>(n) * m * m) / static_cast<double>(n - 1));
  const double half = kZ * std::sqrt(var / static_cast<double>(n));
  return {m - half, m + half};
}

Interval share_interval(int64_t k, int64_t n) {
  if (n <= 0) return {0, 1};
  const double nn = static_cast<double>(n), p = static_cast<double>(k) / nn, z2 = kZ * kZ;
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = kZ * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / (1 + z2 / nn);
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

std::string decide(double value, Interval iv, double threshold, bool higher_is_better) {
  const bool meets = higher_is_better ? value >= threshold : value <= threshold;
  if (!meets || std::isnan(value)) return "fail";
  const bool sure = higher_is_better ? iv.lo >= threshold : iv.hi <= threshold;
  return sure ? "pass" : "undecided";
}

double round6(double v) { return std::round(v * 1e6) / 1e6; }

nlohmann::ordered_json interval_json(Interval iv) {
  const auto end = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(round6(v)) : nlohmann::ordered_json(nullptr); };
  return nlohmann::ordered_json::array({end(iv.lo), end(iv.hi)});
}

std::string interval_text(const nlohmann::ordered_json& pair) {
  const auto end = [](const nlohmann::ordered_json& v, const char* unbounded) {
    return v.is_number() ? figure_text(v.get<double>()) : std::string(unbounded);
  };
  if (!pair.is_array() || pair.size() != 2) return "[-inf, inf]";
  return "[" + end(pair[0], "-inf") + ", " + end(pair[1], "inf") + "]";
}

}  // namespace mcc::judge
