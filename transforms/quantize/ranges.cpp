// Activation ranges and 16-bit widening for the quantize stage (see quantize/ranges.h).
#include "transforms/quantize/ranges.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <map>

#include "transforms/quantize/tune.h"

namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

/// Activations whose estimated 8-bit SNR at a quantized Conv/Gemm is below `db` get 16 bits
/// (uint8 -> uint16, int8 -> int16; a shared-scale group widens as a whole). Returns one entry
/// per widened activation with its estimate.
json widen_below(Selection& sel, const CalibrationResult& cal, const ActivationRanges& acts, const Config& cfg) {
  json out = json::array();
  if (cfg.widen_db <= 0) return out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < sel.activations.size(); ++i) index[sel.activations[i].name] = i;
  std::vector<double> worst(sel.activations.size(), 1e300);
  std::vector<std::string> at(sel.activations.size());
  for (const auto& c : sel.nodes) {
    const ir::Value* x = c.node->input(0);
    if (c.slots.weight < 0 || !x) continue;
    const auto it = index.find(x->name);
    const auto m = cal.channels.find(x->name);
    if (it == index.end() || !acts.ok[it->second] || m == cal.channels.end()) continue;
    const auto& a = sel.activations[it->second];
    if (is_16bit(a.settings.activation)) continue;
    float s = 1;
    int32_t z = 0;
    activation_params(acts.range[it->second].first, acts.range[it->second].second, a.settings.activation,
                      cfg.symmetric(a.settings.activation), s, z);
    const auto snr = estimated_snr_db(*c.node, c.slots, m->second, s);
    if (snr && *snr < worst[it->second]) {
      worst[it->second] = *snr;
      at[it->second] = node_label(*c.node);
    }
  }
  std::vector<bool> widen(sel.activations.size(), false);
  for (size_t i = 0; i < worst.size(); ++i) widen[i] = worst[i] < cfg.widen_db;
  for (size_t i = 0; i < worst.size(); ++i)  // a group widens as a whole
    if (widen[i] && sel.activations[i].group >= 0)
      for (size_t j = 0; j < worst.size(); ++j)
        if (sel.activations[j].group == sel.activations[i].group) widen[j] = true;
  for (size_t i = 0; i < worst.size(); ++i) {
    if (!widen[i]) continue;
    auto& s = sel.activations[i].settings;
    s.activation = is_signed_activation(s.activation) ? ir::DType::I16 : ir::DType::U16;
    json e{{"tensor", sel.activations[i].name}, {"dtype", ir::dtype_name(s.activation)}};
    if (worst[i] < 1e300) e["estimated_snr_db"] = std::round(worst[i] * 100) / 100, e["at"] = at[i];
    out.push_back(e);
  }
  return out;
}

}  // namespace

ActivationRanges activation_ranges(const Selection& sel, const CalibrationResult& cal, const Config& cfg) {
  ActivationRanges acts;
  acts.range.assign(sel.activations.size(), {0.0, 0.0});
  acts.ok.assign(sel.activations.size(), false);
  for (size_t i = 0; i < sel.activations.size(); ++i) {
    const auto& a = sel.activations[i];
    const auto st = cal.stats.find(a.name);
    const auto dt = cal.dtypes.find(a.name);
    if (dt != cal.dtypes.end() && dt->second != ir::DType::F32) {
      acts.skipped.push_back({{"tensor", a.name}, {"reason", "not float32 (" + ir::dtype_name(dt->second) + ")"}});
      continue;
    }
    if (st == cal.stats.end()) {
      acts.skipped.push_back({{"tensor", a.name}, {"reason", "never computed during calibration"}});
      spdlog::warn("quantize: no calibration range for '{}' (read by '{}'); it stays float", a.name, a.consumers[0]);
      continue;
    }
    RangeSpec rs{a.settings.method, cfg.percentile, cfg.symmetric(a.settings.activation),
                 is_16bit(a.settings.activation) ? 16 : 8};
    acts.range[i] = compute_range(st->second, rs);
    acts.ok[i] = true;
  }
  return acts;
}

bool widen_activations(Selection& sel, const CalibrationResult& cal, const Config& cfg, ActivationRanges& acts) {
  acts.widened = widen_below(sel, cal, acts, cfg);
  if (acts.widened.empty()) return false;
  for (size_t i = 0; i < sel.activations.size(); ++i)
    if (acts.ok[i] && is_16bit(sel.activations[i].settings.activation)) {
      const auto st = cal.stats.find(sel.activations[i].name);
      const ir::DType dt = sel.activations[i].settings.activation;
      acts.range[i] = compute_range(st->second, RangeSpec{sel.activations[i].settings.method, cfg.percentile, cfg.symmetric(dt), 16});
    }
  return true;
}

}  // namespace mcc::transforms::quantize
