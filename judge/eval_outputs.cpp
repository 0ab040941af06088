// `mcc eval`'s per-output verdicts over samples (see eval_outputs.h).
#include "judge/eval_outputs.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "ir/errors.h"
#include "judge/probability_outputs.h"
#include "judge/sequence_figures.h"

namespace mcc::judge {
namespace {

bool is_tensor(const backends::RValue& v) { return v.kind == backends::RValue::Kind::Tensor && v.tensor.defined(); }

/// The figures' failures and undecided ones, "metric value (verdict)", joined.
std::string missed(const nlohmann::ordered_json& figures) {
  std::string s;
  for (const auto& f : figures) {
    const std::string v = f.value("verdict", "");
    if (v != "fail" && v != "undecided") continue;
    char b[160];
    std::snprintf(b, sizeof b, "output '%s' %s %.6g (threshold %.6g, 95%% interval ", f["output"].get<std::string>().c_str(),
                  f["metric"].get<std::string>().c_str(), f["value"].get<double>(), f["threshold"].get<double>());
    s += (s.empty() ? "" : "; ") + std::string(b) + interval_text(f["interval"]) + ", " +
         std::to_string(f["tokens"].get<int64_t>()) + " tokens): " + (v == "fail" ? "fails" : "undecided, too few tokens to tell");
  }
  return s;
}

}  // namespace

EvalOutputs::EvalOutputs(VerdictRules rules, const std::vector<std::string>& outputs, const std::vector<bool>& probability)
    : rules_(std::move(rules)) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    JudgedOutput o;
    o.stats.name = outputs[k];
    o.probability = k < probability.size() && probability[k];
    outputs_.push_back(std::move(o));
  }
}

nlohmann::ordered_json EvalOutputs::add_sample(const std::string& sample, const std::vector<backends::RValue>& got,
                                               const std::vector<std::optional<backends::RValue>>& want,
                                               const SequenceFeeds& seq) {
  nlohmann::ordered_json sj{{"sample", sample}, {"outputs", nlohmann::ordered_json::array()}};
  for (size_t k = 0; k < got.size() && k < outputs_.size(); ++k) {
    JudgedOutput& a = outputs_[k];
    const bool has_want = k < want.size() && want[k];
    const bool tensors = is_tensor(got[k]) && (!has_want || is_tensor(*want[k]));
    if (tensors && is_lm_logits(a.stats.name, got[k].tensor, seq, rules_.lm_forced(a.stats.name))) {
      a.lm = true;
      a.sequence.add(a.stats.name, got[k].tensor, has_want ? want[k]->tensor : ir::Tensor(), seq);
    }
    if (!has_want) continue;
    VerdictRules rules = rules_;
    if (a.lm) {  // judged by its token figures; allclose only when --atol/--rtol asked for it
      rules.min_cosine = 0;
      rules.min_snr_db = -std::numeric_limits<double>::infinity();
      if (!rules.tolerance_given) rules.atol.reset(), rules.rtol.reset();
    }
    OutputJudgement j;
    const bool masked = tensors && !a.lm && is_masked(got[k].tensor, seq) && got[k].tensor.dims() == want[k]->tensor.dims();
    const bool nothing = a.probability && tensors && !masked && nothing_in_both(got[k].tensor, want[k]->tensor);
    if (nothing) {  // both see nothing: agrees; allclose rules still apply
      rules.min_cosine = 0;
      rules.min_snr_db = -std::numeric_limits<double>::infinity();
    }
    if (masked) {
      const auto [kept, all] = mask_counts(seq.mask);
      a.positions_kept += kept;
      a.positions_all += all;
      j = judge_output(rules, a.stats.name, backends::RValue::of(unmasked_rows(got[k].tensor, seq.mask)),
                       backends::RValue::of(unmasked_rows(want[k]->tensor, seq.mask)));
    } else {
      j = judge_output(rules, a.stats.name, got[k], *want[k]);
    }
    if (j.dtype != ir::DType::Undefined) a.dtype = j.dtype;
    if (j.kind != "none" || a.stats.samples == 0) a.kind = j.kind;
    // Unmasked rows are [positions, features], not class scores: no top-1 figure.
    if (masked) j.metrics.top1_agree.reset();
    if (nothing) count_as_agreeing(j.metrics, a.stats);
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
  return missed(sequence_json()).empty();
}

nlohmann::ordered_json EvalOutputs::sequence_json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& a : outputs_)
    if (a.lm)
      for (auto& f : sequence_figures(a.stats.name, a.sequence, rules_.sequence_budget(a.stats.name))) out.push_back(f);
  return out;
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
    if (a.positions_all > 0)
      oj["masked"] = {{"by", "attention_mask"}, {"positions_compared", a.positions_kept}, {"positions", a.positions_all}};
    if (s.nothing_samples > 0) oj["samples_nothing_in_both"] = s.nothing_samples;
    if (a.lm) oj["judged_by"] = "token figures (see \"sequence\")";
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
  const std::string seq = missed(sequence_json());
  if (!seq.empty()) throw AccuracyError("accuracy check failed: " + seq);
}

}  // namespace mcc::judge
