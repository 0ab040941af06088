// The check stage's verdict (transforms/check): the figures of measure_agreement (agreement.h)
// judged against an accuracy budget, one figure per output and metric:
//   class scores: top1_agreement >= min_top1 (and cosine_mean >= class_min_cosine when that is > 0);
//   other float outputs: cosine_mean >= min_cosine, with the worst sample's cosine;
//   with labels: top1_drop_points (the input model's top-1 accuracy minus the model's) <= max_top1_drop,
//   or reported only when max_top1_drop < 0;
//   causal-LM logits: perplexity_ratio <= max_perplexity_ratio and token_agreement >=
//   min_token_agreement, kl_mean reported (sequence_figures.h);
//   outputs not measured: metric "none" with the reason.
// Every judged figure carries its 95 % interval and what it rests on (samples, tokens) and is
// decided three ways (interval.h): pass, fail, or undecided when the estimate meets the budget
// but the interval reaches past it (too few samples to tell; 20 of 20 agreeing top-1 classes
// cannot show an agreement of 0.99).
// Values are rounded to 6 decimals, so a recorded verdict reads the same on every machine.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "judge/agreement.h"
#include "judge/sequence_figures.h"

namespace mcc::judge {

struct Budget {
  double min_cosine = 0.99, class_min_cosine = 0, min_top1 = 0.99, max_top1_drop = -1;
  SequenceBudget sequence;
};

/// The figures: [{output, metric, value, threshold, verdict (pass | fail | reported | not measured),
/// samples, ...}].
nlohmann::ordered_json budget_figures(const std::vector<OutputAgreement>& outputs, const Budget& budget);

/// "output 'x' cosine_mean 0.93 < 0.99; ..." for the failed figures; "" when none failed.
std::string missed_figures(const nlohmann::ordered_json& figures);
/// "output 'x' top1_agreement 1 (95 % interval [0.84, 1]) on 20 sample(s)" for the undecided
/// figures; "" when none is.
std::string undecided_figures(const nlohmann::ordered_json& figures);

}  // namespace mcc::judge
