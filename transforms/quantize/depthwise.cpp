// Per-channel activation scales for depthwise convolution inputs (see quantize/depthwise.h).
#include "transforms/quantize/depthwise.h"

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
  }
}

}  // namespace mcc::transforms::quantize
