// Ranks of values where dims are dynamic. ir::ShapeInference records a shape only when every dim
// is known, so a model with a dynamic batch or sequence dim has no inferred shapes past its
// inputs; a question such as "is this axis the last one" needs the rank alone, which a dynamic
// dim does not change. Ranks come from initializers, Constant nodes, declared shapes and
// ShapeInference, then flow through the ai.onnx ops by a rank rule each: same-shape and
// broadcast ops (their op facts, ir/op_facts.h), reductions, MatMul/Gemm, Transpose, Squeeze/
// Unsqueeze, Reshape (a shape operand of known length: constant, or computed from Shape through
// Cast, Slice, Unsqueeze and Concat), Flatten, Gather, pooling, Conv and the ops that keep their
// input's rank (Slice, Pad, Concat, Split, Resize, Tile, ...).
//
// Does not apply to: ops of other domains, ops with no rank rule (Loop, If, Scan bodies' outputs,
// sequence ops), and values that depend on them; their rank is unknown (nullopt).
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "ir/graph.h"
#include "ir/shape_inference/shape_inference.h"

namespace mcc::ir {

class Ranks {
 public:
  /// Propagates over the main graph and, recursively, every subgraph (outer values visible).
  explicit Ranks(const Model& m);
  /// The rank of v; nullopt when it is not known.
  std::optional<int64_t> of(const Value* v) const;

 private:
  void run_graph(const Graph& g);
  void infer(const Node& n);
  std::optional<int64_t> shape_length(const Value* v, int depth) const;
  ShapeInference shapes_;
  std::unordered_map<const Value*, int64_t> table_;
};

}  // namespace mcc::ir
