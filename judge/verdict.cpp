// Verdict rules for `mcc eval` (see eval_verdict.h).
#include "judge/verdict.h"

#include "judge/output_stats.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mcc::judge {
namespace {

int rank_of(const std::string& p) {
  if (p == "int8") return 3;
  if (p == "bf16") return 2;
  if (p == "fp16") return 1;
  return 0;
}

bool is_quantized_op(const ir::Node& n) {
  // ai.onnx, and ONNX Runtime's com.microsoft integer and block-quantized ops (MatMulNBits: int4/int8
  // weight-only models).
  static const char* kOps[] = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger",
                               "MatMulInteger", "DynamicQuantizeLinear", "MatMulNBits", "GatherBlockQuantized",
                               "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QGemm", "QLinearAdd", "QLinearMul",
                               "QLinearConcat", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool",
                               "QLinearGlobalAveragePool"};
  for (const char* op : kOps)
    if (n.op_type == op) return true;
  return false;
}

const char* kind_name(backends::RValue::Kind k) {
  switch (k) {
    case backends::RValue::Kind::Sequence: return "sequence";
    case backends::RValue::Kind::None: return "none";
    default: return "tensor";
  }
}

// Metrics of values that agree exactly (both empty optionals, empty sequences).
// Sequences: element by element under the same rules; metrics aggregated over the elements.
void judge_sequence(const VerdictRules& r, const std::string& output, const backends::RValue& got,
                    const backends::RValue& want, OutputJudgement& j) {
  auto& total = j.metrics;
  total = backends::identical_metrics();
  if (got.seq.size() != want.seq.size()) {
    total.comparable = false;
    total.mismatch = "sequence length " + std::to_string(got.seq.size()) + " vs expected " + std::to_string(want.seq.size());
    j.why = total.mismatch;
    return;
  }
  j.passed = true;
  const auto tol = tolerance_for(r, output);
  for (size_t i = 0; i < want.seq.size(); ++i) {
    const auto m = backends::compare_tensors(got.seq[i], want.seq[i], tol);
    j.dtype = want.seq[i].dtype();
    std::string why;
    if (!output_passes(r, output, j.dtype, m, &why) && j.passed) {
      j.passed = false;
      j.why = "element " + std::to_string(i) + ": " + why;
    }
    if (!m.comparable && total.comparable) total.mismatch = "element " + std::to_string(i) + ": " + m.mismatch;
    backends::accumulate_metrics(total, m);
  }
}

}  // namespace

std::string model_precision(const ir::Model& m) {
  std::string p = "fp32";
  for_each_graph(*m.graph, [&](ir::Graph& g) {
    for (const ir::Node* n : g.nodes())
      if (is_quantized_op(*n)) p = "int8";
    if (p == "int8") return;
    for (const ir::Value* v : g.values()) {
      if (v->dtype == ir::DType::F16 && rank_of(p) < 1) p = "fp16";
      if (v->dtype == ir::DType::BF16) p = "bf16";
    }
  });
  return p;
}

std::string looser_precision(const std::string& a, const std::string& b) { return rank_of(a) >= rank_of(b) ? a : b; }

VerdictRules default_rules(const std::string& profile) {
  VerdictRules r;
  r.profile = profile;
  r.sequence = default_sequence_budget(profile);
  if (profile == "int8") { r.min_cosine = 0.99; r.min_snr_db = 15; }
  else if (profile == "bf16") { r.min_cosine = 0.995; r.min_snr_db = 20; }
  else if (profile == "fp16") { r.min_cosine = 0.999; r.min_snr_db = 30; }
  else { r.atol = 1e-4; r.atol_scaled = true; r.rtol = 1e-3; r.min_cosine = 0.9999; }
  return r;
}

void apply_tolerance_flag(VerdictRules& r, const std::string& flag, const std::string& value) {
  std::string out, num = value;
  if (auto c = value.rfind(':'); c != std::string::npos) { out = value.substr(0, c); num = value.substr(c + 1); }
  double v = 0;
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || p != num.data() + num.size() || !(v >= 0) || !std::isfinite(v))
    throw UsageError(flag + " '" + value + "': expected a non-negative number or output:number");
  const bool is_atol = flag == "--atol";
  r.tolerance_given = true;
  if (out.empty()) {
    if (is_atol) { r.atol = v; r.atol_scaled = false; } else { r.rtol = v; }
    if (is_atol && !r.rtol) r.rtol = 0;
    if (!is_atol && !r.atol) r.atol = 0;
  } else {
    (is_atol ? r.atol_by_output : r.rtol_by_output)[out] = v;
  }
}

void apply_metric_flag(VerdictRules& r, const std::string& value) {
  std::string out, name = value;
  if (auto c = value.rfind(':'); c != std::string::npos) { out = value.substr(0, c); name = value.substr(c + 1); }
  if (name == "perplexity" || name == "token-agreement" || name == "kl") {
    r.lm_metrics[out].insert(name);
    return;
  }
  if (name != "row-cosine")
    throw UsageError("--metric '" + value + "': unknown metric; metrics: row-cosine (mean cosine of the rows along the "
                     "last axis, e.g. one embedding per row), perplexity, token-agreement, kl (causal-LM logits "
                     "against the sample's input_ids), optionally per output as out:metric");
  if (out.empty()) r.row_cosine_all = true;
  else r.row_cosine_outputs.insert(out);
}

SequenceBudget VerdictRules::sequence_budget(const std::string& output) const {
  SequenceBudget b = sequence;
  std::set<std::string> named;
  for (const char* key : {"", output.c_str()})
    if (auto it = lm_metrics.find(key); it != lm_metrics.end()) named.insert(it->second.begin(), it->second.end());
  if (!named.empty()) b.judged = named;
  return b;
}

std::string describe_rules(const VerdictRules& r) {
  std::string s = r.profile + ":";
  if (r.atol || r.rtol)
    s += " allclose(atol=" + figure_text(r.atol.value_or(0)) + (r.atol_scaled ? "*max(1,max|ref|)" : "") +
         ", rtol=" + figure_text(r.rtol.value_or(0)) + "),";
  s += " cosine >= " + figure_text(r.min_cosine);
  if (r.row_cosine_all) s += " (mean over rows)";
  for (const auto& o : r.row_cosine_outputs) s += ", row cosine[" + o + "]";
  if (r.min_snr_db > -1e299) s += ", snr >= " + figure_text(r.min_snr_db) + " dB";
  for (const auto& [o, v] : r.atol_by_output) s += ", atol[" + o + "]=" + figure_text(v);
  for (const auto& [o, v] : r.rtol_by_output) s += ", rtol[" + o + "]=" + figure_text(v);
  return s + "; integer outputs exact";
}

backends::Tolerance tolerance_for(const VerdictRules& r, const std::string& output) {
  backends::Tolerance t{r.atol.value_or(0), r.rtol.value_or(0), r.atol_scaled};
  if (auto it = r.atol_by_output.find(output); it != r.atol_by_output.end()) {
    t.atol = it->second;
    t.atol_scales_with_ref = false;  // a per-output --atol is absolute
  }
  if (auto it = r.rtol_by_output.find(output); it != r.rtol_by_output.end()) t.rtol = it->second;
  return t;
}

bool output_passes(const VerdictRules& r, const std::string& output, ir::DType dtype,
                   const backends::TensorMetrics& m, std::string* why) {
  auto fail = [&](std::string w) { if (why) *why = std::move(w); return false; };
  if (!m.comparable) return fail(m.mismatch);
  if (m.nan_inf_mismatch) return fail(std::to_string(m.nan_inf_mismatch) + " NaN/Inf positions differ");
  if (!ir::info(dtype).is_float) {
    if (m.not_close) return fail(std::to_string(m.not_close) + " of " + std::to_string(m.numel) + " elements differ (exact comparison)");
    return true;
  }
  const bool check_close = r.atol || r.rtol || r.atol_by_output.count(output) || r.rtol_by_output.count(output);
  if (check_close && m.not_close)
    return fail(std::to_string(m.not_close) + " of " + std::to_string(m.numel) + " elements outside allclose (max abs err " +
                figure_text(m.max_abs) + ", atol " + figure_text(m.atol_used) + ")");
  if (r.row_cosine(output) && m.rows > 0) {
    if (m.row_cosine_mean() < r.min_cosine)
      return fail("mean row cosine " + figure_text(m.row_cosine_mean()) + " < " + figure_text(r.min_cosine) + " over " +
                  std::to_string(m.rows) + " rows");
  } else if (m.cosine < r.min_cosine) {
    return fail("cosine " + figure_text(m.cosine) + " < " + figure_text(r.min_cosine));
  }
  if (m.snr_db < r.min_snr_db) return fail("SNR " + figure_text(m.snr_db) + " dB < " + figure_text(r.min_snr_db) + " dB");
  return true;
}

OutputJudgement judge_output(const VerdictRules& r, const std::string& output, const backends::RValue& got,
                             const backends::RValue& want) {
  OutputJudgement j;
  j.kind = kind_name(want.kind);
  if (got.kind != want.kind) {
    j.metrics.comparable = false;
    j.metrics.mismatch = std::string("got a ") + kind_name(got.kind) + ", expected a " + kind_name(want.kind) +
                         " (none = an empty optional)";
    j.why = j.metrics.mismatch;
    return j;
  }
  if (want.kind == backends::RValue::Kind::None) {
    j.metrics = backends::identical_metrics();
    j.passed = true;
    return j;
  }
  if (want.kind == backends::RValue::Kind::Sequence) {
    judge_sequence(r, output, got, want, j);
    return j;
  }
  j.dtype = want.tensor.dtype();
  j.metrics = backends::compare_tensors(got.tensor, want.tensor, tolerance_for(r, output));
  j.passed = output_passes(r, output, j.dtype, j.metrics, &j.why);
  return j;
}

}  // namespace mcc::judge
