// Raising a model's ai.onnx opset across the one schema change mcc rewrites rather than refuses:
// the Reduce ops whose `axes` attribute became an optional int64 input at opset 18 (ReduceL1,
// ReduceL2, ReduceLogSumExp, ReduceMax, ReduceMean, ReduceMin, ReduceProd; ir/op_facts.h lists
// them with after13 = 18). A node carrying the attribute gets it as a constant input instead
// (`<node>_axes`, an initializer of the node's own graph, subgraphs included); a node without it
// reduces every axis before and after, and is left alone. Every other schema change keeps being
// judged by quantize/policy.h's opset_raise_blocker. Does not apply when the raise does not cross
// opset 18, or to other domains.
#pragma once
#include <cstdint>

#include "ir/graph.h"

namespace mcc::transforms {

/// Whether `op` changed meaning at `at` in a way upgrade_opset rewrites (true for the Reduce ops
/// at 18).
bool rewritten_on_raise(const std::string& op, int64_t at);

/// Rewrites the nodes of g and its subgraphs for a raise of the ai.onnx opset from `from` to
/// `to` (since_version is left to the caller). Returns the number of nodes rewritten.
int64_t upgrade_opset(ir::Graph& g, int64_t from, int64_t to);

}  // namespace mcc::transforms
