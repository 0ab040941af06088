// The node rewrites of an opset raise (common/opset_upgrade.h), one step per row of the op facts'
// rewritten meaning changes (ir::raise_rewrites): a step takes a node of the op at a schema
// version before `at` to the form of schema `at`, and may refuse a node whose meaning that form
// cannot keep, saying why. Attributes that became inputs are in opset_rewrites_inputs.cpp; ops
// whose behaviour, outputs or name changed in opset_rewrites_ops.cpp.
//
// A step edits the node in place (attributes, inputs, op type) and adds constants as
// initializers of the node's own graph named `<node>_<what>` (Graph::unique_name); it never adds
// or removes nodes, so a walk over a graph's nodes stays valid while it runs. Does not apply to
// other domains.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/element_types.h"
#include "ir/graph.h"
#include "ir/shape_inference/ranks.h"
#include "ir/shape_inference/shape_inference.h"

namespace mcc::transforms {

/// What the steps read about the model as it was before the raise (values keep their identity
/// through the rewrites), and the opset it is raised to.
struct RaiseFacts {
  explicit RaiseFacts(const ir::Model& m, int64_t to_opset) : types(m), ranks(m), shapes(m), to(to_opset) {}
  ir::ElementTypes types;
  ir::Ranks ranks;
  ir::ShapeInference shapes;
  int64_t to;
};

struct RaiseStep {
  std::string_view op;
  int at;
  /// Why this node cannot be rewritten ("" = it can); nullptr: every node can.
  std::string (*refusal)(const ir::Node& n, const RaiseFacts& f);
  void (*apply)(ir::Graph& g, ir::Node& n, const RaiseFacts& f);
};

/// The step of ir::raise_rewrites' row (op, at); nullptr when there is none.
const RaiseStep* raise_step(std::string_view op, int at);

std::span<const RaiseStep> input_rewrite_steps();  // opset_rewrites_inputs.cpp
std::span<const RaiseStep> op_rewrite_steps();     // opset_rewrites_ops.cpp

// ---------------------------------------------------------------- helpers for the steps

/// The tensor a value always holds: an initializer that is not a graph input, or a Constant
/// node's `value`; nullptr otherwise.
const ir::Tensor* constant_tensor(const ir::Value* v);
/// Adds `t` as an initializer of g named `<node>_<what>` (made unique).
ir::Value& add_node_constant(ir::Graph& g, const ir::Node& n, std::string_view what, ir::Tensor t);
/// A 1-D int64 tensor.
ir::Tensor int64_vector(const std::vector<int64_t>& v);
/// Removes the named attributes of n (absent ones are skipped).
void drop_attrs(ir::Node& n, std::initializer_list<std::string_view> names);
/// Moves the ints attribute `attr` of n to input `index` as an int64 constant; nothing when n
/// does not carry it.
void attr_to_input(ir::Graph& g, ir::Node& n, std::string_view attr, size_t index);

}  // namespace mcc::transforms
