// Output agreement between a model and its reference on a set of input samples: what the check
// stage (transforms/check) judges. Both models run on the cpu Executor over the same samples;
// per float32 output the figures of output_stats.h (the check uses the mean and worst cosine and,
// for class scores, the share of samples whose top-1 agrees); with labels, each model's top-1
// accuracy on the first class-score output. Integer, bool and non-tensor outputs are not
// measured (they are listed as skipped). Sequence outputs (sequence_metrics.h): causal-LM logits
// are scored token by token (perplexity ratio, next-token agreement, KL) instead of by cosine,
// and outputs shaped like a padded sample's attention_mask are compared on unmasked positions.
// A KV-cache decoder's present.* outputs are skipped: the logits judge them. A sample where both
// models see nothing in a probability output agrees (probability_outputs.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "judge/output_stats.h"
#include "judge/sequence_metrics.h"

namespace mcc::judge {

struct OutputAgreement {
  OutputStats stats;
  bool labelled = false;                             // the output scored against labels
  int top1_correct = 0, reference_top1_correct = 0;  // against labels
  std::string skipped;                               // why this output is not measured ("" when measured)
  bool lm = false;                                   // causal-LM logits, judged by `sequence`
  SequenceStats sequence;
  int64_t positions_kept = 0, positions_all = 0;     // masked comparison (unmasked / all positions)
  bool probability = false;                          // written by a Sigmoid (probability_outputs.h)
};

struct AgreementInput {
  std::vector<std::string> sample_dirs;   // in order; labels[i] belongs to sample_dirs[i]
  std::vector<int64_t> labels;            // empty: no labels
  int threads = 0;
};

/// Runs `reference` on every sample, drops it, then runs `model` on them and aggregates per
/// output of `model` (the reference's outputs wait in between: reference_outputs.h). Throws
/// ModelError when the two models' outputs differ in count, or a sample does not fit.
std::vector<OutputAgreement> measure_agreement(const ir::Model& model, ir::Model reference, const AgreementInput& in);

}  // namespace mcc::judge
