// Verdict rules for `mcc eval`: which tolerances apply to what is compared (fp32 tight; fp16,
// bf16 and int8 looser on cosine/SNR), per-output overrides, and the pass/fail decision. The
// report always states the rules that were used, so a user never has to guess them. Sequence
// and optional outputs are judged element by element under the same rules.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "backends/compare.h"
#include "ir/graph.h"

namespace mcc::cli {

/// Precision class of a model: "int8" (QDQ or integer-arithmetic ops), "fp16", "bf16", "fp32".
std::string model_precision(const ir::Model& m);
/// The looser of two precision classes.
std::string looser_precision(const std::string& a, const std::string& b);

struct VerdictRules {
  std::string profile;                       // fp32 | fp16 | bf16 | int8
  std::optional<double> atol, rtol;          // allclose is checked when set
  double min_cosine = 0, min_snr_db = -1e300;
  std::map<std::string, double> atol_by_output, rtol_by_output;  // --atol out:1e-3
};

/// Defaults for a profile: fp32 allclose(atol 1e-4, rtol 1e-3) and cosine >= 0.9999;
/// fp16 cosine >= 0.999, SNR >= 30 dB; bf16 cosine >= 0.995, SNR >= 20 dB;
/// int8 cosine >= 0.99, SNR >= 15 dB. Integer and bool outputs are always compared exactly.
VerdictRules default_rules(const std::string& profile);
/// Applies "--atol 1e-3" / "--atol out:1e-3" style flags; throws UsageError on bad values.
void apply_tolerance_flag(VerdictRules& r, const std::string& flag, const std::string& value);
/// One-line description of the rules ("fp32: allclose(atol=0.0001, rtol=0.001), cosine >= 0.9999").
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

}  // namespace mcc::cli
