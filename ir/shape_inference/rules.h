// Internal interface of ir/shape_inference: what a rule sees of one node (NodeShapes), the
// helpers several families share, and each family's table of op -> rule. A rule follows the ONNX
// operator spec; one that meets anything it does not handle leaves the outputs unknown (or sets
// only what it knows, as the element type of a same-shape op with unknown dims).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ir/shape_inference/shape_inference.h"

namespace mcc::ir::shape_rules {

using Dims = std::vector<int64_t>;

/// One node under inference: its inputs as known so far, and where its outputs go.
class NodeShapes {
 public:
  NodeShapes(const Node& n, ShapeInference& si) : node(n), si_(si) {}
  const Node& node;
  TypeShape in(size_t i) const { return si_.of(node.input(i)); }
  std::optional<Dims> dims(size_t i) const { return in(i).dims; }
  /// Element type of input 0 (Undefined when it is omitted or unknown).
  DType dt0() const { return node.input(0) ? in(0).dtype : DType::Undefined; }
  /// Records output i (ignored past the node's outputs; unknown parts keep what is known).
  void out(size_t i, DType dt, std::optional<Dims> d) const {
    if (i < node.outputs.size()) si_.set(node.outputs[i], TypeShape{dt, std::move(d)});
  }

 private:
  ShapeInference& si_;
};

using Rule = void (*)(const NodeShapes&);
struct NamedRule {
  std::string_view op;
  Rule rule;
};

// Shared helpers (rule_util.cpp).
/// The int64/int32 values of a constant (an initializer that is not a graph input).
std::optional<Dims> const_ints(const Value* v);
/// The float/double values of a constant.
std::optional<std::vector<double>> const_floats(const Value* v);
/// Multidirectional (numpy) broadcast; nullopt when a shape is unknown or they do not broadcast.
std::optional<Dims> broadcast(const std::vector<std::optional<Dims>>& shapes);
/// Normalizes a possibly negative axis; false when it is out of range.
bool norm_axis(int64_t& a, int64_t rank);

// Rules selected by the op's ShapeKind (ir/op_facts.h).
void same_shape(const NodeShapes& c, bool bool_out);       // elementwise.cpp
void broadcast_inputs(const NodeShapes& c, bool bool_out);  // elementwise.cpp
void reduce(const NodeShapes& c);                           // reduce.cpp

// Ops with a rule of their own, per family.
std::span<const NamedRule> elementwise_rules();  // Dropout, Where, Cast, CastLike
std::span<const NamedRule> shape_op_rules();     // Shape, Size, ConstantOfShape
std::span<const NamedRule> conv_pool_rules();    // Conv, pools
std::span<const NamedRule> matmul_rules();       // Gemm, MatMul
std::span<const NamedRule> reshape_rules();      // Reshape, Flatten, Transpose, Concat, ...
std::span<const NamedRule> slice_rules();        // Slice, Gather, Split, Pad
std::span<const NamedRule> resize_rules();       // Resize, Upsample
std::span<const NamedRule> reduce_rules();       // ArgMax, ArgMin
/// Ops of the com.microsoft domain (contrib.cpp), looked up by op type within that domain.
std::span<const NamedRule> microsoft_rules();    // MatMulNBits

}  // namespace mcc::ir::shape_rules
