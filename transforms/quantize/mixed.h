// Measured sensitivity for the quantize stage (quantize/mixed.cpp): each activation is quantized
// alone (weights int8, the rest float) and the model's output cosine against the float model is
// measured on calibration samples with the cpu Executor. The measure picks each activation's
// range method (method=auto) and the activations kept in float (mixed_target, keep_float_top).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/quantize/plan.h"

namespace mcc::transforms::quantize {

/// Runs copies of a float model with a plan applied and compares their float32 outputs with the
/// float model's on a fixed list of samples.
class OutputProbe {
 public:
  /// `corrections`: bias corrections (record.bias_correction.corrected) applied to every copy.
  OutputProbe(const ir::Model& float_model, const std::vector<std::string>& sample_dirs, int threads,
              nlohmann::ordered_json corrections);
  /// Mean over samples and float32 outputs of cos(outputs with `plan`, float outputs); a probability
  /// output where both see nothing counts 1, as the check judges it.
  double mean_cosine(const Plan& plan);
  int64_t evaluations() const { return evaluations_; }
  size_t samples() const { return feeds_.size(); }

 private:
  std::string bytes_, base_dir_;
  int threads_;
  nlohmann::ordered_json corrections_;
  std::vector<std::vector<std::pair<std::string, ir::Tensor>>> feeds_;
  std::vector<std::vector<ir::Tensor>> want_;  // float outputs (undefined for non-float32 outputs)
  std::vector<bool> probability_;               // per output: a Sigmoid's (judge/probability_outputs.h)
  int64_t evaluations_ = 0;
};

struct RangeChoice {
  std::string method;
  std::pair<double, double> range;
};

struct MixedConfig {
  double target = 0;      // > 0: keep the most damaging activations float until mean cosine >= target
  int64_t keep_top = 0;   // > 0: keep exactly this many most damaging units float
  bool measure_all = false;  // measure sensitivities even without target/keep_top (method=auto)
  int64_t float_run_gap = 0; // > 0: join float activations at most this many quantized ones apart
};

struct MixedOutcome {
  std::vector<bool> use;                        // activation quantized
  std::vector<std::pair<double, double>> range; // chosen range per activation
  std::vector<std::string> method;              // chosen method per activation
  int64_t kept_float = 0;                       // activations kept float by the search
  double cosine = 0;                            // measured mean cosine of the final choice
  nlohmann::ordered_json record;
};

/// `use` with float runs joined (MixedConfig::float_run_gap): the quantized activations between two
/// float ones (graph order = index order) become float where at most `gap` lie between, as do
/// those before the first and after the last float one where at most `gap` lie there; a unit
/// (`units`, `unit_of[i]` = the unit of activation i) is filled only when all its members lie in
/// the stretch filled. Activations with !ok[i] are neither counted nor changed. gap <= 0: `use`.
std::vector<bool> join_float_runs(std::vector<bool> use, const std::vector<bool>& ok,
                                  const std::vector<std::vector<size_t>>& units, const std::vector<size_t>& unit_of,
                                  int64_t gap);

/// `units`: activation indices decided together (a shared-scale group, or one activation);
/// `choices[i]`: candidate ranges of activation i (one entry: no method choice; every member of a
/// unit has the same number of candidates); `build(use, ranges, fallback)` gives the plan for a
/// choice; fallback=false: the activations not used are float (one unit measured alone),
/// fallback=true: they are the units chosen to leave 8 bits (the search over k, the result).
/// Deterministic: ties keep the earlier candidate, the earlier unit.
MixedOutcome mixed_search(OutputProbe& probe, const std::vector<std::vector<size_t>>& units,
                          const std::vector<std::vector<RangeChoice>>& choices, const std::vector<bool>& ok,
                          const std::vector<std::string>& names,
                          const std::function<Plan(const std::vector<bool>&, const std::vector<std::pair<double, double>>&, bool)>& build,
                          const MixedConfig& cfg);

}  // namespace mcc::transforms::quantize
