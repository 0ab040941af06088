// Activation and constant matching for kernel-level fusion (see fusion_match.h).
#include "backends/fusion_match.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "ir/float16.h"
#include "ir/op_facts.h"

namespace mcc::backends {

bool is_graph_output(const ir::Value* v) {
  const auto& outs = v->owner->outputs;
  return std::find(outs.begin(), outs.end(), v) != outs.end();
}

const ir::Node* only_reader(const ir::Value* v) {
  if (!v || v->uses.size() != 1 || is_graph_output(v)) return nullptr;
  const ir::Node* u = v->uses[0].user;
  return u->owner == v->owner ? u : nullptr;
}

bool one_output(const ir::Node& n) {
  if (n.outputs.empty() || !n.outputs[0]) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i]) return false;
  return true;
}

const ir::Tensor* constant_of(const ir::Value* v, ir::DType dt) {
  if (!v) return nullptr;
  const ir::Tensor* t = v->initializer ? &*v->initializer : nullptr;
  if (!t && v->producer && v->producer->is("Constant") && v->producer->owner == v->owner)
    t = v->producer->attr_tensor("value");
  return t && t->dtype() == dt ? t : nullptr;
}

bool known_f32(const ir::Value* v, int depth) {
  if (!v) return false;
  if (v->has_type) return v->dtype == ir::DType::F32;
  if (v->initializer) return v->initializer->dtype() == ir::DType::F32;
  const ir::Node* p = v->producer;
  if (!p || !p->domain.empty() || p->owner != v->owner || depth <= 0 || p->inputs.empty()) return false;
  if (p->is("DequantizeLinear"))  // the output has the scale's type unless output_dtype says otherwise
    return p->attr_int("output_dtype", 0) == 0 && p->inputs.size() > 1 && constant_of(p->inputs[1], ir::DType::F32);
  // Output 0 has input 0's element type: the op table's same-shape and broadcast ops, and these
  // ops with shape rules of their own.
  static const char* const kOwnSameType[] = {"AveragePool", "Concat",  "Conv",   "Flatten",   "MaxPool", "Reshape",
                                             "Resize",      "Slice",   "Squeeze", "Transpose", "Unsqueeze"};
  if (p->outputs[0] != v) return false;
  const ir::ShapeKind k = ir::shape_kind(p->op_type);
  bool same = k == ir::ShapeKind::Same || k == ir::ShapeKind::Broadcast;
  for (const char* op : kOwnSameType) same = same || p->is(op);
  return same && known_f32(p->inputs[0], depth - 1);
}

std::optional<float> scalar_f32_constant(const ir::Value* v) {
  const ir::Tensor* t = constant_of(v, ir::DType::F32);
  if (!t || t->numel() != 1 || t->rank() > 1) return std::nullopt;
  return t->data<float>()[0];
}

const ir::Value* other_input(const ir::Node& n, const ir::Value* v) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == v && n.inputs[1] != v) return n.inputs[1];
  if (n.inputs[1] == v && n.inputs[0] != v) return n.inputs[0];
  return nullptr;
}

namespace {

// SiLU: v read by exactly Sigmoid(v) and Mul(v, Sigmoid(v)).
std::optional<ActivationMatch> match_silu(const ir::Value* v) {
  const ir::Node* a = v->uses[0].user;
  const ir::Node* b = v->uses[1].user;
  if (b->is("Sigmoid")) std::swap(a, b);
  if (!a->is("Sigmoid") || !b->is("Mul") || a->owner != v->owner || b->owner != v->owner ||
      !one_output(*a) || !one_output(*b) || a->inputs.size() != 1 || b->inputs.size() != 2)
    return std::nullopt;
  const ir::Value* s = a->outputs[0];
  if (only_reader(s) != b) return std::nullopt;
  if (!((b->inputs[0] == v && b->inputs[1] == s) || (b->inputs[0] == s && b->inputs[1] == v)))
    return std::nullopt;
  ActivationMatch m;
  m.act = ActivationMatch::Act::SiLU;
  m.nodes = {a, b};
  return m;
}

float scalar_value(const ir::Tensor& t) {
  return t.dtype() == ir::DType::F16 ? static_cast<float>(t.data<f16>()[0]) : t.data<float>()[0];
}

// Clip bounds: attributes before opset 11, constant inputs 1 and 2 from 11 on.
bool clip_bounds(const ir::Node& u, ir::DType bound_dtype, ActivationMatch& m) {
  m.alpha = std::numeric_limits<float>::lowest();
  m.beta = std::numeric_limits<float>::max();
  if (u.since_version < 11) {
    m.alpha = u.attr_float("min", m.alpha);
    m.beta = u.attr_float("max", m.beta);
    return true;
  }
  for (size_t i = 1; i < u.inputs.size() && i < 3; ++i) {
    if (!u.inputs[i]) continue;
    const ir::Tensor* t = constant_of(u.inputs[i], bound_dtype);
    if (!t || t->numel() != 1) return false;
    (i == 1 ? m.alpha : m.beta) = scalar_value(*t);
  }
  return u.inputs.size() <= 3;
}

}  // namespace

std::optional<ActivationMatch> match_activation(const ir::Value* v, ir::DType bound_dtype) {
  if (v->uses.size() == 2 && !is_graph_output(v)) return match_silu(v);
  const ir::Node* u = only_reader(v);
  if (!u || !one_output(*u) || u->inputs.empty() || u->inputs[0] != v) return std::nullopt;
  using Act = ActivationMatch::Act;
  ActivationMatch m;
  m.nodes = {u};
  if (u->is("Relu")) {
    m.act = Act::Relu;
  } else if (u->is("Sigmoid")) {
    m.act = Act::Sigmoid;
  } else if (u->is("LeakyRelu")) {
    m.act = Act::LeakyRelu;
    m.alpha = u->attr_float("alpha", 0.01f);
  } else if (u->is("HardSigmoid")) {
    m.act = Act::HardSigmoid;
    m.alpha = u->attr_float("alpha", 0.2f);
    m.beta = u->attr_float("beta", 0.5f);
  } else if (u->is("HardSwish")) {
    m.act = Act::HardSwish;
  } else if (u->is("Clip")) {
    m.act = Act::Clip;
    if (!clip_bounds(*u, bound_dtype, m)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  return m;
}

}  // namespace mcc::backends
