// Verdict rules for `mcc eval`: which tolerances apply to what is compared (fp32 tight; fp16,
// bf16 and int8 looser on cosine/SNR), per-output overrides, and the pass/fail decision. The
// report always states the rules that were used, so a user never has to guess them. Sequence
// and optional outputs are judged element by element under the same rules.
//
// The fp32 default allclose has an absolute tolerance that scales with the output it checks:
// atol = 1e-4 * max(1, max |reference|) of that output in that sample (rtol 1e-3 on top, and
// cosine >= 0.9999). A fixed 1e-4 is right for outputs of magnitude ~1 (probabilities, logits of
// small models) but not for outputs whose values reach hundreds: fp32 rounding in the sums that
// build them is relative to the values summed, so YOLOX-nano's box coordinates (up to 416) differ
// between two correct fp32 runtimes by ~5e-4 at elements whose value is near 0, where rtol gives
// no room. Scaling keeps the rule as tight, relative to the output, as it is for outputs of
// magnitude 1, and a real change (one Conv weight scaled by 1.01) still fails it. A user's
// --atol (global or per output) is an absolute tolerance, as in numpy; --rtol alone keeps the
// scaled default atol. describe_rules() prints the form used ("atol=0.0001*max(1,max|ref|)") and
// the report gives the largest absolute tolerance applied per output.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>

#include "backends/compare.h"
#include "ir/graph.h"
#include "judge/sequence_figures.h"

namespace mcc::judge {

/// Precision class of a model: "int8" (QDQ or integer-arithmetic ops), "fp16", "bf16", "fp32".
std::string model_precision(const ir::Model& m);
/// The looser of two precision classes.
std::string looser_precision(const std::string& a, const std::string& b);

struct VerdictRules {
  std::string profile;                       // fp32 | fp16 | bf16 | int8
  std::optional<double> atol, rtol;          // allclose is checked when set
  bool tolerance_given = false;              // --atol / --rtol given (else the profile's default)
  bool atol_scaled = false;                  // atol is relative to max(1, max |reference|) of each output
  double min_cosine = 0, min_snr_db = -1e300;
  std::map<std::string, double> atol_by_output, rtol_by_output;  // --atol out:1e-3
  /// --metric row-cosine[ / out:row-cosine]: the cosine rule applies to the mean cosine of the rows
  /// along the last axis (one embedding per row), not to the whole tensor.
  bool row_cosine_all = false;
  std::set<std::string> row_cosine_outputs;
  bool row_cosine(const std::string& output) const { return row_cosine_all || row_cosine_outputs.count(output) > 0; }
  /// Causal-LM logits (judge/sequence_metrics.h) are judged by the sequence budget instead of
  /// cosine and SNR (allclose still applies when set). Outputs named "*logits*" are found by
  /// themselves; --metric perplexity|token-agreement|kl[ / out:...] marks outputs (all: "") as
  /// LM logits and chooses the judged figures (the others are reported).
  SequenceBudget sequence;
  std::map<std::string, std::set<std::string>> lm_metrics;  // output ("" = every output) -> metrics named
  /// Whether --metric named a sequence metric for this output (or for all).
  bool lm_forced(const std::string& output) const { return lm_metrics.count("") || lm_metrics.count(output); }
  /// The sequence budget for an output: the metrics --metric named for it, or the defaults.
  SequenceBudget sequence_budget(const std::string& output) const;
};

/// Defaults for a profile: fp32 allclose(atol 1e-4 * max(1, max|ref|), rtol 1e-3) and cosine >= 0.9999;
/// fp16 cosine >= 0.999, SNR >= 30 dB; bf16 cosine >= 0.995, SNR >= 20 dB;
/// int8 cosine >= 0.99, SNR >= 15 dB. Integer and bool outputs are always compared exactly.
VerdictRules default_rules(const std::string& profile);
/// Applies "--atol 1e-3" / "--atol out:1e-3" style flags (a given atol is absolute); throws
/// UsageError on bad values.
void apply_tolerance_flag(VerdictRules& r, const std::string& flag, const std::string& value);
/// Applies "--metric row-cosine|perplexity|token-agreement|kl" (optionally "out:metric"); throws
/// UsageError naming the metrics.
void apply_metric_flag(VerdictRules& r, const std::string& value);
/// One-line description of the rules
/// ("fp32: allclose(atol=0.0001*max(1,max|ref|), rtol=0.001), cosine >= 0.9999; integer outputs exact").
std::string describe_rules(const VerdictRules& r);

/// Tolerance used for allclose on an output (its override, the global value, or a default).
backends::Tolerance tolerance_for(const VerdictRules& r, const std::string& output);
/// Pass/fail of one output's metrics under the rules; `why` gets the first failed rule.
bool output_passes(const VerdictRules& r, const std::string& output, ir::DType dtype,
                   const backends::TensorMetrics& m, std::string* why);

/// One output of one sample judged under the rules: tensors by their metrics; sequences element
/// by element (lengths must match; each element under the same rules, metrics aggregated: worst
/// max/cosine/SNR, mean abs over all elements); empty optionals pass only against empty optionals.
struct OutputJudgement {
  backends::TensorMetrics metrics;
  ir::DType dtype = ir::DType::Undefined;  // the (element) dtype compared; Undefined when nothing was
  std::string kind = "tensor";             // tensor | sequence | none (an empty optional)
  bool passed = false;
  std::string why;                         // the first failed rule ("element 2: ...")
};
OutputJudgement judge_output(const VerdictRules& r, const std::string& output, const backends::RValue& got,
                             const backends::RValue& want);

}  // namespace mcc::judge
