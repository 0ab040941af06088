// Static type-and-shape inference over the IR: element types and fully known dims of values,
// from graph inputs with static declared shapes, initializers and the ai.onnx ops that matter in
// exported models. How an op's output follows from its inputs is an op fact (ir/op_facts.h):
// same-shape, broadcast and reduce ops share one rule each; ops with a rule of their own
// (Conv/pool, Gemm/MatMul, Reshape/Flatten/Transpose/Concat/Squeeze/Unsqueeze/Slice/Gather/Split/
// Pad/Expand/Tile/Resize, ArgMax/ArgMin, Shape/Size/ConstantOfShape, Cast ...) are dispatched from
// a table filled by the per-family rule files in this folder.
//
// com.microsoft ops with a rule (MatMulNBits) are inferred too, by op type within that domain.
//
// Does not apply to: ops of other domains, ops with no static rule, dims that are not all known.
// Their outputs are unknown, and callers must then leave the graph alone: a wrong static shape
// would fold a wrong constant.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace mcc::ir {

namespace shape_rules {
class NodeShapes;
}

struct TypeShape {
  DType dtype = DType::Undefined;
  std::optional<std::vector<int64_t>> dims;  // set only when every dim is known
};

class ShapeInference {
 public:
  /// Propagates over the main graph and, recursively, every subgraph (outer values visible).
  explicit ShapeInference(const Model& m);
  /// What is known about v. Initializers are read from their tensor, never from the table, so a
  /// value created after the propagation (a folded constant) is always right.
  TypeShape of(const Value* v) const;

 private:
  friend class shape_rules::NodeShapes;
  void run_graph(const Graph& g);
  void infer(const Node& n);
  void set(const Value* v, TypeShape ts);
  std::unordered_map<const Value*, TypeShape> table_;
};

/// True when ir/shape_inference has a rule of its own for the ai.onnx op (the ops whose
/// op_facts shape kind is ShapeKind::Own).
bool has_own_shape_rule(std::string_view op);

}  // namespace mcc::ir
