// Which nodes and tensors the quantize stage touches, and with which settings: op types,
// exclusions, the ordered per-layer rules (first match wins), activation merging across
// consumers and the shared-scale groups. Structural only: no calibration, no graph change.
#pragma once
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
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

/// One per-layer rule: `REGEX:action[+action...]`, actions skip, per_tensor, per_channel,
/// uint8, int8, uint16, int16, minmax, percentile, entropy, mse.
struct Rule {
  std::string text, pattern;
  std::regex re;
  std::vector<std::string> actions;
  std::vector<std::string> matched;  // node names the rule applied to (first match wins)
  void apply(Settings& s) const;
};
/// Parses rule items (each item may hold several rules separated by ';'); UsageError on bad syntax.
std::vector<Rule> parse_rules(const std::vector<std::string>& items);

struct ExcludeItem {
  std::string text;
  bool is_regex = false;
  std::regex re;
  std::vector<std::string> matched;
};
std::vector<ExcludeItem> parse_excludes(const std::vector<std::string>& items);

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
  Settings defaults;
  bool symmetric_activations = false;
};

/// Chooses the nodes and activations. Throws UsageError for an op type the stage cannot quantize,
/// an exclude item or a rule that matches nothing (naming the nearest node).
Selection select(ir::Model& model, const SelectConfig& cfg, std::vector<ExcludeItem>& excludes, std::vector<Rule>& rules);

/// Node name used for matching and reporting: the name, or its first output's name when unnamed.
std::string node_label(const ir::Node& n);

}  // namespace mcc::transforms::quantize
