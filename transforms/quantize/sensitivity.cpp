// The measured-sensitivity step of the quantize stage (see quantize/sensitivity.h).
#include "transforms/quantize/sensitivity.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "ir/sample_data.h"
#include "transforms/quantize/bias.h"
#include "transforms/quantize/mixed.h"
#include "transforms/quantize/opset.h"
#include "transforms/quantize/points.h"

namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

/// Units decided together (a shared-scale group, or one activation) and each activation's candidate ranges.
struct Candidates {
  std::vector<std::vector<size_t>> units;
  std::vector<std::vector<RangeChoice>> choices;
  std::vector<std::string> names;
};

Candidates candidates(const Selection& sel, const CalibrationResult& cal, const Config& cfg, const ActivationRanges& acts) {
  Candidates out;
  std::map<int, size_t> group_unit;
  out.choices.resize(sel.activations.size());
  for (size_t i = 0; i < sel.activations.size(); ++i) {
    const auto& a = sel.activations[i];
    out.names.push_back(a.name);
    if (!acts.ok[i]) continue;
    if (a.group < 0) out.units.push_back({i});
    else if (const auto it = group_unit.find(a.group); it != group_unit.end()) out.units[it->second].push_back(i);
    else group_unit[a.group] = out.units.size(), out.units.push_back({i});
    const bool sym = cfg.symmetric(a.settings.activation);
    const int bits = is_16bit(a.settings.activation) ? 16 : 8;
    // Per-channel activations (quantize/depthwise.h) keep their per-channel ranges: one choice.
    if (!cfg.auto_method || a.per_channel) {
      out.choices[i].push_back({calib_method_name(a.settings.method), acts.range[i]});
      continue;
    }
    const auto& st = cal.stats.at(a.name);
    for (CalibMethod m : {CalibMethod::MinMax, CalibMethod::Percentile, CalibMethod::Mse})
      out.choices[i].push_back({calib_method_name(m), compute_range(st, RangeSpec{m, cfg.percentile, sym, bits})});
  }
  return out;
}

/// Gives activation i 16 bits (uint8 -> uint16, int8 -> int16) and returns its minmax range.
std::pair<double, double> widen_to_16(Selection& sel, const CalibrationResult& cal, const Config& cfg, size_t i) {
  auto& st = sel.activations[i].settings;
  st.activation = is_signed_activation(st.activation) ? ir::DType::I16 : ir::DType::U16;
  return compute_range(cal.stats.at(sel.activations[i].name),
                       RangeSpec{CalibMethod::MinMax, cfg.percentile, cfg.symmetric(st.activation), 16});
}

/// Bias corrections of the all-8-bit plan, applied to every measured copy.
json base_corrections(const ir::Model& model, const Selection& sel, const CalibrationResult& cal, const Config& cfg,
                      const ActivationRanges& acts) {
  if (!cfg.bias_correction) return json::array();
  const Points p0 = build_points(model, sel, cfg, acts.ok, acts.range);
  return correct_biases(*model.graph, sel, p0, cal).corrected;
}

/// Takes the search's choice: ranges and methods, and what leaves 8 bits (16-bit or float).
void adopt(const MixedOutcome& mo, Selection& sel, const CalibrationResult& cal, const Config& cfg, ActivationRanges& acts) {
  for (size_t i = 0; i < sel.activations.size(); ++i) {
    if (!acts.ok[i]) continue;
    acts.range[i] = mo.range[i];
    sel.activations[i].settings.method = parse_calib_method(mo.method[i]);
    if (!mo.use[i] && cfg.wide_fallback) {
      acts.range[i] = widen_to_16(sel, cal, cfg, i);
      acts.widened.push_back({{"tensor", sel.activations[i].name},
                              {"dtype", ir::dtype_name(sel.activations[i].settings.activation)},
                              {"reason", "largest measured 8-bit cost"}});
    } else if (!mo.use[i]) {
      acts.ok[i] = false;
      acts.skipped.push_back({{"tensor", sel.activations[i].name}, {"reason", "kept float: largest measured 8-bit cost"}});
    }
  }
}

}  // namespace

Measured measure_sensitivity(const ir::Model& model, const std::string& calib_dir, int threads, Selection& sel,
                             const CalibrationResult& cal, const Config& cfg, ActivationRanges& acts, Plan& plan) {
  const auto t0 = std::chrono::steady_clock::now();
  json corrections = base_corrections(model, sel, cal, cfg, acts);
  std::vector<std::string> dirs = calibration_sample_dirs(calib_dir, 0, static_cast<size_t>(cfg.holdout));
  const size_t cap = std::min<size_t>(static_cast<size_t>(cfg.sensitivity_samples), static_cast<size_t>(cal.samples));
  if (dirs.size() > cap) dirs.resize(cap);
  OutputProbe probe(model, dirs, threads, std::move(corrections));
  const Candidates cand = candidates(sel, cal, cfg, acts);
  MixedConfig mc;
  mc.target = cfg.mixed_target;
  mc.keep_top = cfg.keep_top;
  mc.float_run_gap = cfg.target->float_run_gap;
  const auto opset_before = std::make_pair(plan.opset_to, plan.ir_to);
  if (cfg.wide_fallback) require_opset(model, sel, true, plan);
  // The plan for a choice, built on copies: the units not used get 16 bits when fallback applies.
  auto plan_for = [&](const std::vector<bool>& use, const std::vector<std::pair<double, double>>& rng, bool fallback) {
    std::vector<bool> use2 = use;
    std::vector<std::pair<double, double>> rng2 = rng;
    const auto saved = sel.activations;
    if (cfg.wide_fallback && fallback)
      for (size_t i = 0; i < use.size(); ++i)
        if (acts.ok[i] && !use[i]) use2[i] = true, rng2[i] = widen_to_16(sel, cal, cfg, i);
    Plan p = plan;
    p.points = build_points(model, sel, cfg, use2, rng2).points;
    sel.activations = saved;
    return p;
  };
  const MixedOutcome mo = mixed_search(probe, cand.units, cand.choices, acts.ok, cand.names, plan_for, mc);
  adopt(mo, sel, cal, cfg, acts);
  Measured out;
  out.kept_float = cfg.wide_fallback ? 0 : mo.kept_float;
  if (cfg.wide_fallback && mo.kept_float == 0) plan.opset_to = opset_before.first, plan.ir_to = opset_before.second;
  out.record = mo.record;
  out.record["fallback"] = cfg.wide_fallback ? "16bit" : "float";
  spdlog::info("quantize: measured sensitivities of {} activations ({} model runs over {} samples) in {:.2f} s; {} "
               "left out of 8 bits ({}), measured cosine {:.5f}", cand.units.size(), probe.evaluations(), probe.samples(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), mo.kept_float,
               cfg.wide_fallback ? "16-bit" : "float", mo.cosine);
  return out;
}

}  // namespace mcc::transforms::quantize
