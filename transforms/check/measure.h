// Output agreement between a model and its reference on a set of input samples: what the check
// stage (check/check.h) judges. Both models run on the cpu Executor over the same samples; per
// float output the cosine of each sample (mean and worst over samples) and, for class scores
// ([C] or [N, C] floats, the outputs backends::compare_tensors gives a top-1 verdict), the share
// of samples whose top-1 agrees; with labels, each model's top-1 accuracy on the first class-score
// output. Integer, bool and non-tensor outputs are not measured (they are listed as skipped).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace mcc::transforms::check {

struct OutputAgreement {
  std::string name;
  bool class_scores = false;       // top-1 is the metric that matters
  int samples = 0;
  double cosine_sum = 0, cosine_min = 1;
  int top1_agree = 0;              // samples whose top-1 equals the reference's (class scores)
  int top1_correct = 0, reference_top1_correct = 0;  // against labels (first class-score output)
  bool labelled = false;
  std::string skipped;             // why this output is not measured ("" when measured)

  double cosine_mean() const { return samples ? cosine_sum / samples : 1.0; }
  double top1_agreement() const { return samples ? static_cast<double>(top1_agree) / samples : 1.0; }
};

struct AgreementInput {
  std::vector<std::string> sample_dirs;   // in order; labels[i] belongs to sample_dirs[i]
  std::vector<int64_t> labels;            // empty: no labels
  int threads = 0;
};

/// Runs `model` and `reference` on every sample and aggregates per output of `model`. Throws
/// ModelError when the two models' outputs differ in count, or a sample does not fit.
std::vector<OutputAgreement> measure_agreement(const ir::Model& model, const ir::Model& reference,
                                               const AgreementInput& in);

}  // namespace mcc::transforms::check
