// The check stage's figures against its budget (see check_figures.h).
#include "judge/check_figures.h"

#include <cmath>
#include <cstdio>

namespace mcc::judge {
namespace {

using json = nlohmann::ordered_json;

json figure(const std::string& output, const std::string& metric, double value, double threshold, bool higher_is_better,
            int samples, Interval iv) {
  return json{{"output", output},
              {"metric", metric},
              {"value", round6(value)},
              {"interval", interval_json(iv)},
              {"threshold", threshold},
              {"verdict", decide(value, iv, threshold, higher_is_better)},
              {"samples", samples}};
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
    if (a.lm) {
      for (auto& f : sequence_figures(s.name, a.sequence, b.sequence)) checks.push_back(std::move(f));
    } else if (s.class_scores()) {
      // min_top1 = 1 asks that every sample agrees: the samples themselves settle it.
      const double agree = s.top1_agreement();
      checks.push_back(figure(s.name, "top1_agreement", agree, b.min_top1, true, s.samples,
                              b.min_top1 >= 1 ? Interval{agree, agree} : share_interval(s.top1_agree, s.top1_samples)));
      if (b.class_min_cosine > 0) {
        json f = figure(s.name, "cosine_mean", s.cosine_mean(), b.class_min_cosine, true, s.samples, s.cosine_interval());
        f["worst_sample_cosine"] = round6(s.cosine_min);
        checks.push_back(std::move(f));
      }
    } else {
      json f = figure(s.name, "cosine_mean", s.cosine_mean(), b.min_cosine, true, s.samples, s.cosine_interval());
      f["worst_sample_cosine"] = round6(s.cosine_min);
      // Probability outputs: samples where both models see nothing, counted as agreeing.
      if (s.nothing_samples > 0) f["samples_nothing_in_both"] = s.nothing_samples;
      if (a.positions_all > 0) {
        f["masked_by"] = "attention_mask";
        f["positions_compared"] = a.positions_kept;
        f["positions"] = a.positions_all;
      }
      checks.push_back(std::move(f));
    }
    if (a.labelled) {
      const double top1 = 100.0 * a.top1_correct / s.samples, ref = 100.0 * a.reference_top1_correct / s.samples;
      // Both accuracies are counted on the same samples: the drop in points is judged as it is.
      json f{{"output", s.name}, {"metric", "top1_drop_points"}, {"value", round6(ref - top1)},
             {"threshold", b.max_top1_drop}, {"verdict", ref - top1 <= b.max_top1_drop ? "pass" : "fail"},
             {"samples", s.samples}};
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

namespace {

/// The figures of one verdict, each described by `describe`, joined with "; ".
template <class D>
std::string figures_with_verdict(const json& checks, const char* verdict, const D& describe) {
  std::string s;
  for (const auto& c : checks) {
    if (c["verdict"] != verdict) continue;
    const std::string metric = c["metric"].get<std::string>();
    const bool at_most = metric == "top1_drop_points" || metric == "perplexity_ratio" || metric == "kl_mean";
    s += (s.empty() ? "" : "; ") + std::string("output '") + c["output"].get<std::string>() + "' " + metric + " " +
         figure_text(c["value"].get<double>()) + describe(c, at_most);
  }
  return s;
}

}  // namespace

std::string missed_figures(const json& checks) {
  return figures_with_verdict(checks, "fail", [](const json& c, bool at_most) {
    return (at_most ? " > " : " < ") + figure_text(c["threshold"].get<double>());
  });
}

std::string undecided_figures(const json& checks) {
  return figures_with_verdict(checks, "undecided", [](const json& c, bool at_most) {
    return (at_most ? " <= " : " >= ") + figure_text(c["threshold"].get<double>()) + " but its 95% interval " + interval_text(c["interval"]) + " on " +
           (c.contains("tokens") ? std::to_string(c["tokens"].get<int64_t>()) + " token(s)"
                                 : std::to_string(c["samples"].get<int>()) + " sample(s)") +
           " reaches past it";
  });
}

}  // namespace mcc::judge
