// Which nodes and tensors the quantize stage touches, and with which settings: op types,
// exclusions, the ordered per-layer rules (first match wins), activation merging across
// consumers and the shared-scale groups. Structural only: no calibration, no graph change.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/common/node_filter.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/policy.h"

namespace mcc::transforms::quantize {

/// Per-node settings; defaults come from the stage options, rules override them.
struct Settings {
  bool skip = false;
  bool per_channel = true;
  ir::DType activation = ir::DType::U8;  // u8, i8, u16, i16
  CalibMethod method = CalibMethod::MinMax;
};

/// The actions of one per-layer rule `REGEX:action[+action...]`: skip, per_tensor, per_channel,
/// uint8, int8, uint16, int16, minmax, percentile, entropy, mse.
struct RuleActions {
  std::vector<std::string> names;
  void apply(Settings& s) const;
};
using Rule = NodeRule<RuleActions>;
using Rules = NodeRules<RuleActions>;
/// Parses rule items (each item may hold several rules separated by ';'); UsageError on bad syntax
/// or a bad regex. Rules match nodes by the rule in common/node_filter.h.
Rules parse_rules(const std::vector<std::string>& items);

/// exclude= items (names, output names, op types or regexes; common/node_filter.h).
NodeFilter parse_excludes(const std::vector<std::string>& items);

struct Candidate {
  ir::Node* node;
  NodeSlots slots;
  Settings settings;
};

struct ActivationInfo {
  std::string name;
  std::vector<std::string> consumers;
  Settings settings;  // merged over consumers: widest bits, signed if any asks, first method
  int group = -1;
  /// One scale per channel (axis 1): every consumer is a depthwise convolution (quantize/depthwise.h).
  bool per_channel = false;
  std::vector<std::pair<double, double>> channel_ranges;  // calibrated per-channel [lo, hi] (per_channel)
};

struct Selection {
  std::vector<Candidate> nodes;                 // quantized nodes, graph order
  std::vector<ActivationInfo> activations;      // in order of first use
  std::vector<std::vector<std::string>> groups; // shared-scale groups (activation names)
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();  // {node, op, reason}
  bool already_quantized = false;
};

struct SelectConfig {
  std::vector<std::string> op_types;
  OpSet need_quantized_output;  // kept only while their output is quantized (quantize/target.h)
  OpSet same_scale_output;      // output shares the input's scale (quantize/target.h)
  OpSet float_inputs_from;      // activations these ops produce stay float (quantize/target.h)
  bool float_scalar_steps = false;  // Add/Mul by a one-element constant stay float (quantize/target.h)
  bool float_image_stem = false;    // the first convolution on the input image stays float (quantize/image_stem.h)
  Settings defaults;
  bool symmetric_activations = false;
};

/// Chooses the nodes and activations. Throws UsageError for an op type the stage cannot quantize,
/// an exclude item or a rule that matches nothing (naming the nearest node).
Selection select(ir::Model& model, const SelectConfig& cfg, NodeFilter& excludes, Rules& rules);

/// Node name used for reporting: the name, or its first output's name when unnamed.
using transforms::node_label;

}  // namespace mcc::transforms::quantize
