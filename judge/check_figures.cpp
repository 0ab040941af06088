// The check stage's figures against its budget (see check_figures.h).
#include "judge/check_figures.h"

#include <cmath>
#include <cstdio>

namespace mcc::judge {
namespace {

using json = nlohmann::ordered_json;

double round6(double v) { return std::round(v * 1e6) / 1e6; }

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

json figure(const std::string& output, const std::string& metric, double value, double threshold, bool higher_is_better,
            int samples) {
  const bool pass = higher_is_better ? value >= threshold : value <= threshold;
  return json{{"output", output},   {"metric", metric},   {"value", round6(value)},
              {"threshold", threshold}, {"verdict", pass ? "pass" : "fail"}, {"samples", samples}};
}

}  // namespace

json budget_figures(const std::vector<OutputAgreement>& outputs, const Budget& b) {
  json checks = json::array();
  for (const auto& a : outputs) {
    const OutputStats& s = a.stats;
    if (!a.skipped.empty() || s.samples == 0) {
      checks.push_back({{"output", s.name}, {"metric", "none"}, {"verdict", "not measured"},
                        {"why", a.skipped.empty() ? "no samples" : a.skipped}});
      continue;
    }
    if (s.class_scores()) {
      checks.push_back(figure(s.name, "top1_agreement", s.top1_agreement(), b.min_top1, true, s.samples));
      if (b.class_min_cosine > 0) {
        json f = figure(s.name, "cosine_mean", s.cosine_mean(), b.class_min_cosine, true, s.samples);
        f["worst_sample_cosine"] = round6(s.cosine_min);
        checks.push_back(std::move(f));
      }
    } else {
      json f = figure(s.name, "cosine_mean", s.cosine_mean(), b.min_cosine, true, s.samples);
      f["worst_sample_cosine"] = round6(s.cosine_min);
      checks.push_back(std::move(f));
    }
    if (a.labelled) {
      const double top1 = 100.0 * a.top1_correct / s.samples, ref = 100.0 * a.reference_top1_correct / s.samples;
      json f = figure(s.name, "top1_drop_points", ref - top1, b.max_top1_drop, false, s.samples);
      f["top1"] = round6(top1);
      f["reference_top1"] = round6(ref);
      if (b.max_top1_drop < 0) {
        f["threshold"] = nullptr;
        f["verdict"] = "reported";
      }
      checks.push_back(std::move(f));
    }
  }
  return checks;
}

std::string missed_figures(const json& checks) {
  std::string s;
  for (const auto& c : checks) {
    if (c["verdict"] != "fail") continue;
    const bool drop = c["metric"] == "top1_drop_points";
    s += (s.empty() ? "" : "; ") + std::string("output '") + c["output"].get<std::string>() + "' " +
         c["metric"].get<std::string>() + " " + fmt(c["value"].get<double>()) + (drop ? " > " : " < ") +
         fmt(c["threshold"].get<double>());
  }
  return s;
}

}  // namespace mcc::judge
