// Op facts for the quantize stage, kept in one place: which ops it can wrap in QDQ, which of
// their inputs are activations, weights and biases, the per-channel axis of each weight, which
// ops need equal scales on their inputs, and which ops survive a raise of the model's opset
// (per-channel QDQ needs ai.onnx opset >= 13; the schema history it reads is in ir/op_facts.h).
// The quantize stage reads nothing else about ops.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace mcc::transforms::quantize {

using OpSet = std::set<std::string, std::less<>>;

/// Ops quantized by default: the compute-heavy ops with weights.
const OpSet& default_ops();
/// Every op the stage can quantize (default_ops plus what op_types= may add).
const OpSet& supported_ops();
/// Ops whose quantized inputs must share one scale (Concat).
const OpSet& equal_scale_ops();
/// Ops that carry weights (ir::OpFacts::weights) but are not quantized, each with the reason
/// (op -> why). The stage needs a decision only for ops with weights: every other op runs in
/// float32 on the dequantized values of its neighbours, which costs nothing in model size.
const std::map<std::string, std::string, std::less<>>& not_quantized();

/// How the inputs of one node are quantized.
struct NodeSlots {
  std::vector<int> activations;  // input positions quantized as activations (QuantizeLinear→DequantizeLinear)
  int weight = -1;               // input quantized offline as int8 (constant); -1 = none
  int weight_axis = -1;          // per-channel axis of that weight
  int bias = -1;                 // input quantized as int32 with scale = x_scale * w_scale; -1 = none
  int bias_channel_div = 1;      // bias channel c uses weight scale (c % bias_channel_div) (ConvTranspose groups)
};

/// The slots of `n` in a model, given which inputs are constants. A weight slot whose input is not
/// a float32 constant becomes an activation slot (MatMul of two activations); a bias slot whose
/// input is not a suitable constant is left in float32. nullopt when `n` is not a supported op.
std::optional<NodeSlots> slots_for(const ir::Node& n);

/// Why the default domain cannot be raised from `from` to `to` ("" = it can): names the first
/// node whose op changed meaning between those opsets (by the schema-history facts in
/// ir/op_facts.h). The Reduce ops' axes attribute -> input change at 18 does not block: apply_plan
/// rewrites those nodes (common/opset_upgrade.h).
std::string opset_raise_blocker(const ir::Graph& g, int64_t from, int64_t to);

}  // namespace mcc::transforms::quantize
