// `mcc eval`'s verdict on every output over the samples compared: each sample's outputs judged
// under the verdict rules (judge/verdict.h) and folded into per-output figures (output_stats.h);
// the report's "outputs" and "per_sample" sections, and the accuracy error that makes the exit
// code 1 when an output failed on some sample. Sequence outputs (judge/sequence_metrics.h): an
// output shaped [B, T, ...] like a padded sample's attention_mask is compared on its unmasked
// positions only; causal-LM logits are judged by the token figures of judge/sequence_figures.h
// over all samples (a figure that fails or cannot be decided fails the run) instead of cosine,
// SNR and the profile's default allclose (an explicit --atol/--rtol still applies), and their perplexity is reported even when there is nothing to compare with.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "judge/output_stats.h"
#include "judge/sequence_metrics.h"
#include "judge/verdict.h"

namespace mcc::judge {

/// One output over all samples that had an expected value for it.
struct JudgedOutput {
  OutputStats stats;
  ir::DType dtype = ir::DType::Undefined;
  std::string kind = "tensor";  // tensor | sequence | none (see judge_output)
  int failed = 0;
  std::string first_failure;    // "<sample>: <first failed rule>"
  bool lm = false;              // causal-LM logits: judged by `sequence`
  SequenceStats sequence;
  int64_t positions_kept = 0, positions_all = 0;  // masked comparison: unmasked positions, all positions
  bool probability = false;     // written by a Sigmoid: a sample where both see nothing agrees (probability_outputs.h)
};

class EvalOutputs {
 public:
  /// `probability`: per output, written by a Sigmoid (probability_outputs.h); empty: none is.
  EvalOutputs(VerdictRules rules, const std::vector<std::string>& outputs, const std::vector<bool>& probability = {});

  /// Judges one sample's outputs against the expected ones (absent: not compared, but an LM
  /// output's perplexity is still scored); `seq` are the sample's token ids and attention mask.
  /// Returns the sample's "per_sample" entry.
  nlohmann::ordered_json add_sample(const std::string& sample, const std::vector<backends::RValue>& got,
                                    const std::vector<std::optional<backends::RValue>>& want,
                                    const SequenceFeeds& seq = {});

  const VerdictRules& rules() const { return rules_; }
  const std::vector<JudgedOutput>& outputs() const { return outputs_; }
  /// Output values compared, over all samples.
  int compared() const { return compared_; }
  bool passed() const;
  /// The report's "outputs": one entry per output compared at least once.
  nlohmann::ordered_json outputs_json() const;
  /// The token figures of every causal-LM output (sequence_figures.h); empty when there is none.
  nlohmann::ordered_json sequence_json() const;
  /// AccuracyError naming the first failed output, its count and first failure; nothing when all passed.
  void throw_if_failed() const;

 private:
  VerdictRules rules_;
  std::vector<JudgedOutput> outputs_;
  int compared_ = 0;
};

}  // namespace mcc::judge
