// Judging a causal-LM output's token figures against its budget (see sequence_figures.h).
#include "judge/sequence_figures.h"

#include <cmath>

#include "judge/output_stats.h"

namespace mcc::judge {
namespace {

using json = nlohmann::ordered_json;

json figure(const std::string& output, const std::string& metric, double value, Interval iv, const SequenceStats& s) {
  return json{{"output", output},
              {"metric", metric},
              {"value", json_number(round6(value))},
              {"interval", interval_json(iv)},
              {"tokens", s.tokens()},
              {"samples", s.samples()}};
}

void judge_figure(json& f, bool judged, double threshold, bool higher_is_better, double value, Interval iv) {
  f["threshold"] = judged ? json(threshold) : json(nullptr);
  f["verdict"] = judged ? decide(value, iv, threshold, higher_is_better) : "reported";
}

}  // namespace

SequenceBudget default_sequence_budget(const std::string& profile) {
  SequenceBudget b;
  if (profile == "fp32") {
    b.max_perplexity_ratio = 1.001, b.min_token_agreement = 0.99, b.max_kl = 1e-4;
  } else if (profile == "fp16") {
    b.max_perplexity_ratio = 1.01, b.min_token_agreement = 0.95, b.max_kl = 0.01;
  } else if (profile == "bf16") {
    b.max_perplexity_ratio = 1.05, b.min_token_agreement = 0.9, b.max_kl = 0.05;
  }
  return b;
}

json sequence_figures(const std::string& output, const SequenceStats& s, const SequenceBudget& b) {
  json out = json::array();
  if (s.tokens() == 0) {
    out.push_back({{"output", output}, {"metric", "none"}, {"verdict", "not measured"},
                   {"why", "no token to score (every position masked, or windows of one token)"}});
    return out;
  }
  if (!s.has_reference()) {
    json f = figure(output, "perplexity", s.perplexity(), s.perplexity_interval(), s);
    f["verdict"] = "reported";
    out.push_back(std::move(f));
    return out;
  }
  json ppl = figure(output, kPerplexityRatioMetric, s.perplexity_ratio(), s.perplexity_ratio_interval(), s);
  judge_figure(ppl, b.judged.count("perplexity") > 0, b.max_perplexity_ratio, false, s.perplexity_ratio(),
               s.perplexity_ratio_interval());
  ppl["perplexity"] = json_number(round6(s.perplexity()));
  ppl["reference_perplexity"] = json_number(round6(s.reference_perplexity()));
  out.push_back(std::move(ppl));
  json agree = figure(output, kTokenAgreementMetric, s.token_agreement(), s.token_agreement_interval(), s);
  judge_figure(agree, b.judged.count("token-agreement") > 0, b.min_token_agreement, true, s.token_agreement(),
               s.token_agreement_interval());
  out.push_back(std::move(agree));
  json kl = figure(output, "kl_mean", s.kl_mean(), s.kl_interval(), s);
  judge_figure(kl, b.judged.count("kl") > 0, b.max_kl, false, s.kl_mean(), s.kl_interval());
  out.push_back(std::move(kl));
  return out;
}

bool judged_language_model(const json& checks) {
  for (const auto& c : checks) {
    const std::string metric = c.value("metric", "");
    if (metric == kPerplexityRatioMetric || metric == kTokenAgreementMetric) return true;
  }
  return false;
}

}  // namespace mcc::judge
