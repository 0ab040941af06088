// The quantize stage's report: the layer census (taken before the graph changes), the stats and
// the record written into the sidecar state (keys in a fixed order: the state's bytes depend on
// it). Replay reads the record back (quantize/quantize.cpp); nothing here changes the model.
// Does not apply to a model that already holds QDQ nodes (the stage records only that).
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/quantize/bias.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/points.h"
#include "transforms/quantize/ranges.h"
#include "transforms/quantize/select.h"
#include "transforms/quantize/sensitivity.h"

namespace mcc::transforms::quantize {

struct Census {
  int64_t layers_with_weights = 0;  // Conv, Gemm and MatMul nodes of the main graph
  int64_t layers_all_8bit = 0;      // of those: int8 weights and every quantized input 8-bit
};

/// Counts the layers before apply_plan renames values.
Census layer_census(const ir::Graph& g, const Selection& sel, const Points& pts);

/// The stage's stats (also record.stats).
nlohmann::ordered_json stage_stats(const Selection& sel, const Plan& plan, const Points& pts, int64_t calibration_samples,
                                   const BiasCorrections& bias, const Measured& measured, const Census& census);

/// What the run decided, for the record.
struct RecordParts {
  const Plan& plan;
  const nlohmann::ordered_json& calibration;  // data, samples, files, sha256, method
  const nlohmann::ordered_json& matched;      // {"rules": [...], "exclude": [...]}: what each matched
  const Selection& sel;
  const ActivationRanges& acts;
  const Points& points;
  const BiasCorrections& bias;
  const Measured& measured;
  const nlohmann::ordered_json& stats;
};

/// The stage's record (format 1), which replay applies with no calibration data.
nlohmann::ordered_json stage_record(const RecordParts& r);

}  // namespace mcc::transforms::quantize
