// The prune stage (magnitude pruning, unstructured or whole output channels) and the pieces it is
// made of, exposed for tests: layer selection, the mask codec, the channel dependency analysis.
// See prune.cpp for the stage, prune/unstructured.cpp, prune/structured.cpp, channel_groups.cpp
// and prune/mask_codec.cpp for the parts.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/common/node_filter.h"
#include "transforms/pipeline/pass.h"

namespace mcc::transforms::prune {

/// The `prune` stage.
std::unique_ptr<Pass> make_pass();


// ---- options shared by both modes

/// Layer selection: include=, exclude= and the ordered overrides= REGEX:SPARSITY rules (first
/// match wins), matched by the rule in common/node_filter.h.
struct Selector {
  NodeFilter include, exclude;
  NodeRules<double> overrides;
  /// Compiles the options' items; throws UsageError for a bad regex or override.
  Selector(const std::vector<std::string>& include_items, const std::vector<std::string>& exclude_items,
           const std::vector<std::string>& override_items);
  /// True when the node is selected (include empty or matching, no exclude matching); records
  /// the match on the items it hit.
  bool selected(const ir::Node& n);
  /// The override sparsity for the node (first matching rule), or nullopt.
  std::optional<double> override_for(const ir::Node& n);
  /// Throws UsageError for the first item (of include, exclude, overrides) that matched nothing.
  void require_all_matched(const std::vector<std::string>& all_names) const;
};

/// A node's name for matching and records: its name, or its first output's name when unnamed.
std::string node_key(const ir::Node& n);

// ---- mask codec: a bit mask of `n` elements, as compact text for the state

struct EncodedMask {
  std::string encoding;  // "rle" (varint run lengths, first run = unset bits) or "bitset" (LSB first)
  std::string data;      // base64
};
EncodedMask encode_mask(const std::vector<bool>& bits);
/// Throws ModelError when the text is not a valid mask of exactly `n` elements.
std::vector<bool> decode_mask(const EncodedMask& m, size_t n);

// ---- unstructured

struct UnstructuredConfig {
  double sparsity = 0.5;
  bool global = false;
  Selector* selector = nullptr;
};
/// Zeroes the smallest-magnitude weights; returns the record ("tensors" list) and fills stats.
nlohmann::ordered_json prune_unstructured(ir::Model& m, const UnstructuredConfig& cfg,
                                          nlohmann::ordered_json& stats);
/// Applies a recorded "tensors" list exactly; throws ModelError when it does not fit the model.
void replay_unstructured(ir::Model& m, const nlohmann::ordered_json& record, nlohmann::ordered_json& stats);

/// The weight a prunable node reads (Conv/ConvTranspose/Gemm/MatMul input 1, an initializer of a
/// float dtype), or nullptr.
ir::Value* prunable_weight(const ir::Node& n);

// ---- structured: channel groups (channel_groups.cpp)

/// A span of a value's channel axis that belongs to one group (group -1: fixed channels).
struct Segment {
  int group = -1;
  int64_t size = 0;
};

/// Where a group's channels are cut: (node, input index, tensor axis); the channel index list
/// for the site is the concatenation over `segments` of each segment's kept channels.
struct SliceSite {
  ir::Node* node = nullptr;
  int input = 0;
  int axis = 0;
  std::vector<Segment> segments;
  bool reshape_shape = false;  // a Reshape target shape: element `axis` holds the channel count
};

struct Group {
  int id = 0;
  int64_t channels = 0;
  std::vector<ir::Node*> producers;   // layers whose output channels form the group (graph order)
  std::vector<ir::Node*> depthwise;   // depthwise convs tied to it
  bool blocked = false;
  std::string reason;                 // why it is blocked (first reason found)
};

struct ChannelAnalysis {
  std::vector<Group> groups;          // roots only (after joining), in order of first producer
  std::vector<SliceSite> sites;
  /// Values whose channel axis changes: (value, axis from the end (negative), segments).
  struct Touched { ir::Value* value; int neg_axis; std::vector<Segment> segments; };
  std::vector<Touched> values;
  std::vector<std::pair<ir::Node*, std::vector<Segment>>> group_attrs;  // depthwise Conv `group`
};

/// Finds the channel groups of the main graph (producers joined through Add/Mul/Concat, followed
/// through BN, activations, depthwise convs, Flatten) and every place they must be cut.
ChannelAnalysis analyze_channels(ir::Graph& g);

// ---- structured: ranking and rewriting (prune/structured.cpp)

struct StructuredConfig {
  double sparsity = 0.3;
  bool global = false;
  bool l2 = false;
  int64_t min_channels = 1;
  int64_t round_to = 1;
  Selector* selector = nullptr;
};
nlohmann::ordered_json prune_channels(ir::Model& m, const StructuredConfig& cfg, nlohmann::ordered_json& stats);
void replay_channels(ir::Model& m, const nlohmann::ordered_json& record, nlohmann::ordered_json& stats);

}  // namespace mcc::transforms::prune
