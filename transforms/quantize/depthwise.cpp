// Per-channel activation scales for depthwise convolution inputs (see quantize/depthwise.h).
#include "transforms/quantize/depthwise.h"

#include <algorithm>
#include <map>

namespace mcc::transforms::quantize {
namespace {

/// Conv with group > 1 whose constant weight has one input channel per group.
bool is_depthwise_conv(const ir::Node& n) {
  if (n.op_type != "Conv" || n.attr_int("group", 1) <= 1) return false;
  const ir::Value* w = n.input(1);
  if (!w || !w->initializer || w->initializer->rank() < 3) return false;
  const auto& d = w->initializer->dims();
  return d[1] == 1 && d[0] % n.attr_int("group", 1) == 0;
}

/// Whether per-channel steps cut the expected quantization noise power by kMinGain or more: the
/// tensor's step squared over the mean of the channels' steps squared (ranges widened to hold 0).
/// Channels of like ranges (e.g. ReLU6 outputs) gain nothing and keep one scale.
bool worth_per_channel(const std::vector<std::pair<double, double>>& ranges) {
  constexpr double kMinGain = 2.0;  // 3 dB
  double lo = 0, hi = 0, sum_sq = 0;
  for (const auto& [l, h] : ranges) {
    lo = std::min(lo, l), hi = std::max(hi, h);
    const double w = std::max(h, 0.0) - std::min(l, 0.0);
    sum_sq += w * w;
  }
  const double mean_sq = sum_sq / static_cast<double>(std::max<size_t>(ranges.size(), 1));
  const double tensor_sq = (hi - lo) * (hi - lo);
  return mean_sq > 0 ? tensor_sq >= kMinGain * mean_sq : false;
}

}  // namespace

void mark_depthwise_inputs(Selection& sel) {
  std::map<std::string, const ir::Node*> by_label;
  for (const auto& c : sel.nodes) by_label[node_label(*c.node)] = c.node;
  for (auto& a : sel.activations) {
    if (a.group >= 0 || a.consumers.empty()) continue;
    bool all = true;
    for (const auto& label : a.consumers) {
      const auto it = by_label.find(label);
      all = all && it != by_label.end() && is_depthwise_conv(*it->second) && it->second->input(0) &&
            it->second->input(0)->name == a.name;
    }
    a.per_channel = all;
  }
}

void fill_channel_ranges(Selection& sel, const CalibrationResult& cal, const Config& cfg) {
  for (auto& a : sel.activations) {
    if (!a.per_channel) continue;
    const auto it = cal.channel_stats.find(a.name);
    if (it == cal.channel_stats.end() || it->second.empty()) {
      a.per_channel = false;
      continue;
    }
    const ir::DType dt = a.settings.activation;
    const RangeSpec spec{a.settings.method, cfg.percentile, cfg.symmetric(dt), is_16bit(dt) ? 16 : 8};
    a.channel_ranges.clear();
    for (const TensorStats& st : it->second) a.channel_ranges.push_back(compute_range(st, spec));
    a.per_channel = worth_per_channel(a.channel_ranges);
  }
}

}  // namespace mcc::transforms::quantize
