// A minimal static type-and-shape propagation for the fold stage: element types and fully known
// dims of values, from graph inputs with static declared shapes, initializers and the ops that
// matter in exported models (elementwise, Conv/pool, Gemm/MatMul, Reshape/Flatten/Transpose/
// Concat/Squeeze/Unsqueeze/Slice/Gather/Split/Pad/Expand/Tile/Resize, reductions, Shape/Size).
// Anything it does not understand is unknown, and callers must then leave the graph alone: a
// wrong static shape would fold a wrong constant.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace mcc::transforms {

struct TypeShape {
  ir::DType dtype = ir::DType::Undefined;
  std::optional<std::vector<int64_t>> dims;  // set only when every dim is known
};

class StaticShapes {
 public:
  /// Propagates over the main graph and, recursively, every subgraph (outer values visible).
  explicit StaticShapes(const ir::Model& m);
  /// What is known about v. Initializers are read from their tensor, never from the table, so a
  /// value created after the propagation (a folded constant) is always right.
  TypeShape of(const ir::Value* v) const;

 private:
  void run_graph(const ir::Graph& g);
  void infer(const ir::Node& n);
  void set(const ir::Value* v, TypeShape ts);
  std::unordered_map<const ir::Value*, TypeShape> table_;
};

}  // namespace mcc::transforms
