// Raising a model's ai.onnx opset: the import, every ai.onnx node's since_version, and a rewrite
// of each node whose op changed meaning on the way in a way a local rewrite expresses. The op
// facts list those changes (ir::raise_rewrites, ir/op_facts.h: Clip's min/max attributes become
// inputs at 11, Upsample becomes Resize at 10, Softmax runs along one axis from 13, the axes of
// Squeeze/Unsqueeze/ReduceSum become inputs at 13 and those of the other Reduce ops at 18, ...);
// common/opset_rewrites.h writes them, a node at a time, chaining the changes a long raise
// crosses (Upsample-7 -> Upsample-9 -> Resize-10 -> Resize-11). Constants a rewrite adds are
// initializers of the node's own graph named `<node>_<what>` (`<node>_axes`, `<node>_min`).
// A rewrite refuses a node whose meaning its target form cannot keep (a Softmax whose 2-D
// coercion spans several axes, a Dropout whose mask is read, a Clip-6 on an input of unknown
// element type): raise_refusal names the first such node with the reason, and upgrade_opset
// refuses before changing anything. Changes of meaning no rewrite covers are judged from the same
// op facts by quantize/policy.h's opset_raise_blocker. Does not apply to other domains, or when
// the opset is not raised.
#pragma once
#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace mcc::transforms {

/// Whether a raise across opset `at` rewrites nodes of `op` (ir::raise_rewrites lists (op, at)).
bool rewritten_on_raise(const std::string& op, int64_t at);

/// Why raising the ai.onnx opset of m from `from` to `to` cannot rewrite one of its nodes,
/// subgraphs included ("" = every rewrite the raise needs applies): "node 'x' (Op-N): ...".
std::string raise_refusal(const ir::Model& m, int64_t from, int64_t to);

/// Raises the ai.onnx opset of m from `from` to `to`: rewrites the nodes whose meaning changes on
/// the way, then sets the import and every ai.onnx node's since_version to `to`. Throws
/// UnsupportedError, with the model unchanged, when raise_refusal names a node. Returns the
/// number of rewrite steps applied (0, and nothing changed, when `to` <= `from`).
int64_t upgrade_opset(ir::Model& m, int64_t from, int64_t to);

}  // namespace mcc::transforms
