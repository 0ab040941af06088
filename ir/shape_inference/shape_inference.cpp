// The propagation driver of ir/shape_inference (see shape_inference.h): walks every graph in
// node order, subgraphs before the node that holds them, and dispatches each ai.onnx node to
// the rule its op facts select, and each com.microsoft node with a rule to it by op type.
#include "ir/shape_inference/shape_inference.h"

#include <map>

#include "ir/op_facts.h"
#include "ir/shape_inference/rules.h"

namespace mcc::ir {
namespace {

using shape_rules::NamedRule;
using shape_rules::Rule;

const std::map<std::string_view, Rule, std::less<>>& own_rules() {
  static const auto table = [] {
    std::map<std::string_view, Rule, std::less<>> t;
    for (auto family : {shape_rules::elementwise_rules(), shape_rules::shape_op_rules(),
                        shape_rules::conv_pool_rules(), shape_rules::matmul_rules(),
                        shape_rules::reshape_rules(), shape_rules::slice_rules(),
                        shape_rules::resize_rules(), shape_rules::reduce_rules()})
      for (const NamedRule& r : family) t.emplace(r.op, r.rule);
    return t;
  }();
  return table;
}

const std::map<std::string_view, Rule, std::less<>>& microsoft_rules() {
  static const auto table = [] {
    std::map<std::string_view, Rule, std::less<>> t;
    for (const NamedRule& r : shape_rules::microsoft_rules()) t.emplace(r.op, r.rule);
    return t;
  }();
  return table;
}

}  // namespace

bool has_own_shape_rule(std::string_view op) { return own_rules().count(op) != 0; }

ShapeInference::ShapeInference(const Model& m) {
  if (m.graph) run_graph(*m.graph);
}

TypeShape ShapeInference::of(const Value* v) const {
  TypeShape ts;
  if (!v) return ts;
  if (v->initializer) {
    ts.dtype = v->initializer->dtype();
    if (!v->is_graph_input) ts.dims = v->initializer->dims();
    return ts;
  }
  auto it = table_.find(v);
  if (it != table_.end()) ts = it->second;
  if (ts.dtype == DType::Undefined) ts.dtype = v->dtype;
  if (!ts.dims) ts.dims = v->shape.static_dims();  // a declared fully static shape
  return ts;
}

void ShapeInference::set(const Value* v, TypeShape ts) {
  if (!v) return;
  TypeShape& cur = table_[v];
  if (ts.dtype != DType::Undefined) cur.dtype = ts.dtype;
  if (ts.dims) cur.dims = std::move(ts.dims);
}

void ShapeInference::run_graph(const Graph& g) {
  for (const Node* n : g.nodes()) {
    for (const Graph* sg : n->subgraphs()) run_graph(*sg);
    infer(*n);
  }
}

void ShapeInference::infer(const Node& n) {
  if (n.outputs.empty()) return;
  const shape_rules::NodeShapes c(n, *this);
  if (n.domain == "com.microsoft") {
    const auto it = microsoft_rules().find(n.op_type);
    if (it != microsoft_rules().end()) it->second(c);
    return;
  }
  if (!(n.domain.empty() || n.domain == "ai.onnx")) return;
  switch (shape_kind(n.op_type)) {
    case ShapeKind::Same: return shape_rules::same_shape(c, false);
    case ShapeKind::SameBool: return shape_rules::same_shape(c, true);
    case ShapeKind::Broadcast: return shape_rules::broadcast_inputs(c, false);
    case ShapeKind::BroadcastBool: return shape_rules::broadcast_inputs(c, true);
    case ShapeKind::Reduce: return shape_rules::reduce(c);
    case ShapeKind::Own: {
      const auto it = own_rules().find(n.op_type);
      if (it != own_rules().end()) it->second(c);
      return;
    }
    case ShapeKind::None: return;
  }
}

}  // namespace mcc::ir
