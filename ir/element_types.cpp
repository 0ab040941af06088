// Element-type propagation: declared, inferred, then the schema rule.
#include "ir/element_types.h"

namespace mcc::ir {

DType schema_output_dtype(const Node& n, size_t k, const OpTypeInfo* t, const std::function<DType(const Value*)>& input_dtype) {
  if (n.op_type == "Cast" && n.domain.empty()) {
    const Attribute* to = n.attr("to");  // Cast-1 names the type as a string: left unknown
    return to && to->kind == AttrKind::String ? DType::Undefined : static_cast<DType>(n.attr_int("to", 0));
  }
  if (n.op_type == "Constant" && n.domain.empty()) {
    if (const Tensor* v = n.attr_tensor("value")) return v->dtype();
    if (n.has_attr("value_float") || n.has_attr("value_floats")) return DType::F32;
    if (n.has_attr("value_int") || n.has_attr("value_ints")) return DType::I64;
    return DType::Undefined;
  }
  if (n.op_type == "ConstantOfShape" && n.domain.empty()) {
    const Tensor* v = n.attr_tensor("value");
    return v ? v->dtype() : DType::F32;
  }
  if (!t) return DType::Undefined;
  const SlotTypes* s = t->output(k);
  if (!s) return DType::Undefined;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const SlotTypes* in = t->input(i);
    if (in && n.inputs[i] && in->type_param == s->type_param) {
      const DType d = input_dtype(n.inputs[i]);
      if (d != DType::Undefined) return d;
    }
  }
  if (s->type_param == "tensor(float)") return DType::F32;
  if (s->type_param == "tensor(int64)") return DType::I64;
  if (s->type_param == "tensor(bool)") return DType::Bool;
  return DType::Undefined;
}

const OpTypeInfo* fitting_schema(const Node& n, int64_t opset) {
  const OpTypeInfo* t = op_type_info(n.op_type, n.domain, opset);
  if (!t) return nullptr;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] && !t->input(i)) return nullptr;
  for (size_t k = 0; k < n.outputs.size(); ++k)
    if (n.outputs[k] && !t->output(k)) return nullptr;
  return t;
}

ElementTypes::ElementTypes(const Model& m) {
  if (!m.graph) return;
  const ShapeInference shapes(m);
  run_graph(m, *m.graph, shapes);
}

DType ElementTypes::of(const Value* v) const {
  if (!v) return DType::Undefined;
  if (v->initializer) return v->initializer->dtype();
  auto it = table_.find(v);
  if (it != table_.end()) return it->second;
  return v->type_passthrough.bytes.empty() ? v->dtype : DType::Undefined;
}

namespace {
// The body value that becomes output k of a control-flow node (If: a branch's output k; Loop: body
// output k + 1, past the condition; Scan: body output k), or nullptr.
const Value* body_output(const Node& n, size_t k) {
  if (!n.domain.empty()) return nullptr;
  const Graph* body = nullptr;
  size_t index = k;
  if (n.op_type == "If") body = n.attr_graph("then_branch");
  else if (n.op_type == "Loop") { body = n.attr_graph("body"); index = k + 1; }
  else if (n.op_type == "Scan") body = n.attr_graph("body");
  if (!body || index >= body->outputs.size()) return nullptr;
  return body->outputs[index];
}
}  // namespace

void ElementTypes::run_graph(const Model& m, const Graph& g, const ShapeInference& shapes) {
  auto lookup = [this](const Value* v) { return of(v); };
  for (const Node* n : g.nodes()) {
    for (const Graph* sg : n->subgraphs()) run_graph(m, *sg, shapes);
    const int64_t opset = n->since_version > 0 ? n->since_version : m.opset(n->domain);
    const OpTypeInfo* t = fitting_schema(*n, opset);
    for (size_t k = 0; k < n->outputs.size(); ++k) {
      const Value* o = n->outputs[k];
      if (!o) continue;
      DType d = o->type_passthrough.bytes.empty() ? o->dtype : DType::Undefined;
      if (d == DType::Undefined) d = shapes.of(o).dtype;
      if (d == DType::Undefined) d = schema_output_dtype(*n, k, t, lookup);
      if (d == DType::Undefined) d = of(body_output(*n, k));
      table_[o] = d;
    }
  }
}

}  // namespace mcc::ir
