// The check stage's verdict (transforms/check): the figures of measure_agreement (agreement.h)
// judged against an accuracy budget, one figure per output and metric:
//   class scores: top1_agreement >= min_top1 (and cosine_mean >= class_min_cosine when that is > 0);
//   other float outputs: cosine_mean >= min_cosine, with the worst sample's cosine;
//   with labels: top1_drop_points (the input model's top-1 accuracy minus the model's) <= max_top1_drop,
//   or reported only when max_top1_drop < 0;
//   outputs not measured: metric "none" with the reason.
// Values are rounded to 6 decimals, so a recorded verdict reads the same on every machine.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "judge/agreement.h"

namespace mcc::judge {

struct Budget {
  double min_cosine = 0.99, class_min_cosine = 0, min_top1 = 0.99, max_top1_drop = -1;
};

/// The figures: [{output, metric, value, threshold, verdict (pass | fail | reported | not measured),
/// samples, ...}].
nlohmann::ordered_json budget_figures(const std::vector<OutputAgreement>& outputs, const Budget& budget);

/// "output 'x' cosine_mean 0.93 < 0.99; ..." for the failed figures; "" when none failed.
std::string missed_figures(const nlohmann::ordered_json& figures);

}  // namespace mcc::judge
