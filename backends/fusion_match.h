// Device-neutral matching of the nodes a backend may fold into a producer's output loop: the
// single-reader test, constant inputs, and the activation (Relu, Clip with constant bounds,
// Sigmoid, SiLU as Sigmoid->Mul(x, sigmoid(x)), LeakyRelu, HardSigmoid, HardSwish) reading a
// value. The cpu conv fusion and the cuda Conv/Gemm epilogue fusion both match through it; each
// backend turns a match into its own epilogue. The graph is never changed here.
#pragma once
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace mcc::backends {

/// An activation reading a value, and the nodes that compute it.
struct ActivationMatch {
  enum class Act { Relu, Clip, Sigmoid, SiLU, LeakyRelu, HardSigmoid, HardSwish };
  Act act = Act::Relu;
  float alpha = 0.f, beta = 0.f;  // Clip: [alpha, beta]; LeakyRelu: alpha; HardSigmoid: alpha, beta
  std::vector<const ir::Node*> nodes;  // in order; the last one's output 0 is the activated value
};

/// True when v is an output of the graph that owns it.
bool is_graph_output(const ir::Value* v);
/// The single reader of v in v's graph, or null (several readers, a subgraph capture, a graph
/// output).
const ir::Node* only_reader(const ir::Value* v);
/// True when n has output 0 and no other output.
bool one_output(const ir::Node& n);
/// The initializer of v, or the `value` tensor of the Constant node producing v in the same
/// graph, when its dtype is dt; else null.
const ir::Tensor* constant_of(const ir::Value* v, ir::DType dt);
/// True when v is f32: declared so, an f32 initializer, or the output of a DequantizeLinear with an
/// f32 constant scale or of an op whose output has its input 0's type (the op table's Same and
/// Broadcast ops; Conv, Resize, MaxPool, Concat and the reshaping ops) whose input is known f32,
/// looking at most `depth` producers up.
bool known_f32(const ir::Value* v, int depth = 8);
/// The f32 value of a constant of one element and rank 0 or 1 (so it never changes a broadcast
/// shape), or nullopt.
std::optional<float> scalar_f32_constant(const ir::Value* v);
/// The other input of the two-input node n reading v once (v as input 0 or 1), or null.
const ir::Value* other_input(const ir::Node& n, const ir::Value* v);
/// The activation that alone reads v (or the Sigmoid->Mul pair of SiLU), with Clip bounds that
/// are scalar constants of dtype bound_dtype (f32 or f16); nullopt when there is none.
std::optional<ActivationMatch> match_activation(const ir::Value* v, ir::DType bound_dtype);

}  // namespace mcc::backends
