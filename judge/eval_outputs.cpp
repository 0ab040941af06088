// `mcc eval`'s per-output verdicts over samples (see eval_outputs.h).
#include "judge/eval_outputs.h"

#include "ir/errors.h"

namespace mcc::judge {

EvalOutputs::EvalOutputs(VerdictRules rules, const std::vector<std::string>& outputs) : rules_(std::move(rules)) {
  for (const auto& name : outputs) {
    JudgedOutput o;
    o.stats.name = name;
    outputs_.push_back(std::move(o));
  }
}

nlohmann::ordered_json EvalOutputs::add_sample(const std::string& sample, const std::vector<backends::RValue>& got,
                                               const std::vector<std::optional<backends::RValue>>& want) {
  nlohmann::ordered_json sj{{"sample", sample}, {"outputs", nlohmann::ordered_json::array()}};
  for (size_t k = 0; k < got.size() && k < outputs_.size(); ++k) {
    if (k >= want.size() || !want[k]) continue;
    JudgedOutput& a = outputs_[k];
    const OutputJudgement j = judge_output(rules_, a.stats.name, got[k], *want[k]);
    if (j.dtype != ir::DType::Undefined) a.dtype = j.dtype;
    if (j.kind != "none" || a.stats.samples == 0) a.kind = j.kind;
    const auto& m = j.metrics;
    a.stats.add(m);
    ++compared_;
    if (!j.passed) {
      ++a.failed;
      if (a.first_failure.empty()) a.first_failure = sample + ": " + j.why;
    }
    nlohmann::ordered_json oj{{"name", a.stats.name}};
    if (j.kind != "tensor") oj["kind"] = j.kind;
    oj.update(nlohmann::ordered_json{{"max_abs", json_number(m.max_abs)}, {"max_rel", json_number(m.max_rel)},
                                     {"mean_abs", json_number(m.mean_abs)}, {"cosine", json_number(m.cosine)},
                                     {"snr_db", json_number(m.snr_db)}, {"passed", j.passed}});
    sj["outputs"].push_back(std::move(oj));
  }
  return sj;
}

bool EvalOutputs::passed() const {
  for (const auto& a : outputs_)
    if (a.failed) return false;
  return true;
}

nlohmann::ordered_json EvalOutputs::outputs_json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& a : outputs_) {
    const OutputStats& s = a.stats;
    if (s.samples == 0) continue;
    nlohmann::ordered_json oj{{"name", s.name}, {"dtype", ir::dtype_name(a.dtype)}};
    if (a.kind != "tensor") oj["kind"] = a.kind;
    oj.update(nlohmann::ordered_json{{"samples", s.samples}, {"failed", a.failed},
                                     {"max_abs", json_number(s.max_abs)}, {"max_rel", json_number(s.max_rel)},
                                     {"mean_abs", json_number(s.mean_abs())}, {"min_cosine", json_number(s.cosine_min)},
                                     {"min_snr_db", json_number(s.snr_min)}});
    if (s.atol_used > 0) oj["atol"] = s.atol_used;  // the largest absolute tolerance allclose applied
    if (s.top1_samples) oj["top1_agreement"] = s.top1_agreement();
    if (rules_.row_cosine(s.name) && s.rows > 0)
      oj.update(nlohmann::ordered_json{{"rows", s.rows}, {"row_cosine_mean", s.row_cosine_mean()},
                                       {"row_cosine_min", s.row_cosine_min}});
    if (!a.first_failure.empty()) oj["first_failure"] = a.first_failure;
    out.push_back(std::move(oj));
  }
  return out;
}

void EvalOutputs::throw_if_failed() const {
  for (const auto& a : outputs_)
    if (a.failed)
      throw AccuracyError("accuracy check failed: output '" + a.stats.name + "' failed on " + std::to_string(a.failed) +
                          " of " + std::to_string(a.stats.samples) + " sample(s) (first: " + a.first_failure + ")");
}

}  // namespace mcc::judge
