// Dynamic INT8 quantization: the choice of points (see quantize/dynamic.h).
#include "transforms/quantize/dynamic.h"

#include <algorithm>
#include <map>

#include "ir/errors.h"
#include "ir/op_attrs.h"
#include "ir/output_names.h"
#include "transforms/quantize/opset.h"
#include "transforms/quantize/policy.h"

namespace mcc::transforms::quantize {

namespace {

/// Why candidate c has no dynamic form ("" when it has one).
std::string dynamic_refusal(const Candidate& c) {
  const ir::Node& n = *c.node;
  if (n.op_type != "MatMul" && n.op_type != "Gemm") return "mode=dynamic quantizes MatMul and Gemm only";
  const ir::Value* w = n.input(1);
  if (c.slots.weight != 1 || !w || !w->initializer || w->initializer->rank() != 2)
    return "its weight is not a float32 constant matrix (mode=dynamic quantizes weights offline)";
  const ir::Value* a = n.input(0);
  if (!a || a->initializer || (a->dtype != ir::DType::F32 && a->dtype != ir::DType::Undefined)) return "its input is not a float32 activation";
  if (n.op_type == "Gemm") {
    const ir::GemmAttrs ga(n);
    if (ga.trans_a() || ga.alpha() != 1.f || (n.input(2) && ga.beta() != 1.f))
      return "a Gemm with transA, alpha != 1 or beta != 1 has no dynamic form";
  }
  return "";
}

int weight_axis(const Candidate& c) { return c.settings.per_channel ? c.slots.weight_axis : -1; }

/// A fused GELU node: ai.onnx 20 Gelu, com.microsoft Gelu/FastGelu/BiasGelu.
bool is_gelu_node(const ir::Node& n) { return n.op_type == "Gelu" || n.op_type == "FastGelu" || n.op_type == "BiasGelu"; }

/// The nonlinearity of an exported GELU: Erf (exact form) or Tanh (approximation).
bool is_gelu_core(const ir::Node& n) { return n.is("Erf") || n.is("Tanh"); }

/// An elementwise step around an exported GELU's core: Add, Mul, Div, Sub, or Pow (the x^3 of the
/// tanh form).
bool is_gelu_arithmetic(const ir::Node& n) { return n.is("Add") || n.is("Mul") || n.is("Div") || n.is("Sub") || n.is("Pow"); }

/// Whether v is a GELU output: a Gelu node (ai.onnx 20, com.microsoft Gelu/FastGelu/BiasGelu), or
/// a Mul whose operands reach an Erf or Tanh within three producers through GELU arithmetic (the
/// exported forms x * 0.5 * (1 + erf(x / sqrt 2)) and 0.5 * x * (1 + tanh(...))).
bool is_gelu_output(const ir::Value* v) {
  const ir::Node* n = v ? v->producer : nullptr;
  if (!n) return false;
  if (is_gelu_node(*n)) return true;
  if (!n->is("Mul")) return false;
  std::vector<std::pair<const ir::Node*, int>> todo{{n, 0}};
  while (!todo.empty()) {
    const auto [m, depth] = todo.back();
    todo.pop_back();
    for (const ir::Value* in : m->inputs) {
      const ir::Node* p = in ? in->producer : nullptr;
      if (!p || p->owner != n->owner) continue;
      if (is_gelu_core(*p)) return true;
      if (depth < 3 && is_gelu_arithmetic(*p)) todo.push_back({p, depth + 1});
    }
  }
  return false;
}

/// Whether layer n's output reaches a GELU's nonlinearity within five Add/Mul/Div/Sub/Pow steps
/// (a bias Add, then x / sqrt 2 -> Erf, or x^3 ... -> Tanh), or feeds a Gelu node: n is the
/// up-projection of a feed-forward block.
bool feeds_gelu(const ir::Node& n) {
  std::vector<std::pair<const ir::Value*, int>> todo{{n.outputs.at(0), 0}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    for (const ir::Use& u : v->uses) {
      const ir::Node* m = u.user;
      if (m->owner != n.owner) continue;
      if (is_gelu_core(*m) || is_gelu_node(*m)) return true;
      if (depth < 5 && is_gelu_arithmetic(*m)) todo.push_back({m->outputs.at(0), depth + 1});
    }
  }
  return false;
}

/// Whether the model is a causal LM: a graph output named like logits (ir/output_names.h) of rank
/// 3, [batch, tokens, vocabulary]. A decoder's residual stream carries a few tokens far larger
/// than the rest at every layer, so auto gives every activation its row ranges there.
bool causal_lm(const ir::Graph& g) {
  for (const ir::Value* o : g.outputs)
    if (o && ir::names_lm_logits(o->name) && o->shape.rank_known() && o->shape.rank() == 3) return true;
  return false;
}

}  // namespace

void add_embedding_points(const ir::Model& model, const Config& cfg, Points& pts) {
  const ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version > 0 && model.ir_version < 4;
  for (const ir::Node* n : g.nodes()) {
    if (!n->is("Gather") || n->attr_int("axis", 0) != 0) continue;
    const ir::Value* t = n->input(0);
    if (!t || !t->initializer || t->initializer->dtype() != ir::DType::F32 || t->initializer->rank() != 2 ||
        pts.weight.count(t->name) || is_graph_output(g, t) || (t->is_graph_input && !ir3))
      continue;
    std::vector<std::string> readers;
    for (const ir::Use& u : t->uses)
      if (u.user->owner == &g && u.user->is("Gather") && u.input_index == 0 && u.user->attr_int("axis", 0) == 0)
        readers.push_back(node_label(*u.user));
    if (readers.size() != t->uses.size()) continue;  // read by something else: stays float
    QPoint p = weight_point(*t, cfg.select.defaults.per_channel ? 1 : -1);
    p.gathered = true;  // the Gathers read the int8 codes (quantize/apply_gather.h)
    p.consumers = readers;
    pts.weight[t->name] = pts.points.size();
    pts.points.push_back(std::move(p));
    ++pts.embeddings;
  }
}

Points dynamic_points(const ir::Model& model, Selection& sel, const Config& cfg) {
  Points pts;
  std::vector<Candidate> kept;
  auto skip = [&](const Candidate& c, const std::string& why) {
    sel.skipped.push_back({{"node", node_label(*c.node)}, {"op", c.node->op_type}, {"reason", why}});
  };
  for (const Candidate& c : sel.nodes)
    if (const std::string why = dynamic_refusal(c); why.empty()) kept.push_back(c);
    else skip(c, why);
  // Weights read by a node that stays float, or quantized along another axis, keep their readers float.
  keep_candidates_with_consistent_weights(model, sel, kept, weight_axis);
  // Layers reading a GELU output keep a float input (int8 weights behind DequantizeLinear): a few
  // channels of a GELU output run 10-100x the rest, and one run-time uint8 range for the whole
  // tensor loses the small values that carry most of the signal.
  std::vector<Candidate> float_input;
  if (cfg.float_gelu_inputs) {
    std::vector<Candidate> rest;
    for (const Candidate& c : kept) (is_gelu_output(c.node->input(0)) ? float_input : rest).push_back(c);
    kept.swap(rest);
  }
  const bool every_row = cfg.per_token || (cfg.per_token_ffn && causal_lm(*model.graph));
  for (const Candidate& c : kept) {
    const std::string& a = c.node->input(0)->name;
    if (!pts.activation.count(a)) {
      QPoint p;
      p.tensor = a;
      p.role = Role::Activation;
      p.dynamic = true;
      p.per_token = every_row || (cfg.per_token_ffn && is_gelu_output(c.node->input(0)));
      p.dtype = ir::DType::U8;
      p.method = "dynamic";
      pts.activation[a] = pts.points.size();
      pts.points.push_back(std::move(p));
    }
    QPoint& p = pts.points[pts.activation[a]];
    p.consumers.push_back(node_label(*c.node));
    p.per_token = p.per_token || (cfg.per_token_ffn && feeds_gelu(*c.node));
    p.row_ends_on_codes = p.per_token;
  }
  for (const Candidate& c : kept) {
    const ir::Value* w = c.node->input(1);
    if (pts.weight.count(w->name)) continue;
    pts.weight[w->name] = pts.points.size();
    pts.points.push_back(weight_point(*w, weight_axis(c)));
    ++pts.weights;
  }
  for (const Candidate& c : float_input) {
    const ir::Value* w = c.node->input(1);
    if (const auto it = pts.weight.find(w->name); it != pts.weight.end()) {
      // Shared with a layer quantized at run time: that layer's integer weight is written; this one reads the float.
      pts.skipped.push_back({{"tensor", w->name}, {"reason", "also read by a layer with a GELU input, which keeps it float"}});
      continue;
    }
    QPoint p = weight_point(*w, weight_axis(c));
    p.consumers.push_back(node_label(*c.node));
    p.note = "input is a GELU output: kept float, weight int8 (float_gelu_inputs=true)";
    pts.weight[w->name] = pts.points.size();
    pts.points.push_back(std::move(p));
    ++pts.weights;
    ++pts.float_inputs;
  }
  kept.insert(kept.end(), float_input.begin(), float_input.end());
  if (cfg.embeddings) add_embedding_points(model, cfg, pts);
  sel.nodes = kept;
  sel.activations.clear();
  sel.groups.clear();
  return pts;
}

void require_dynamic_opset(const ir::Model& model, const Selection& sel, const Points& pts, Plan& plan) {
  bool per_row = false;
  for (const QPoint& p : pts.points) per_row = per_row || (p.role == Role::Weight && p.axis >= 0 && !p.consumers.empty());
  // DynamicQuantizeLinear: 11; DequantizeLinear with an axis: 13.
  const int64_t need = per_row ? 13 : sel.nodes.empty() ? (pts.embeddings ? 10 : 0) : 11;
  if (plan.opset_from >= need) return;
  if (const std::string why = raise_blocker(model, plan.opset_from, need); !why.empty())
    throw UnsupportedError("quantize: mode=dynamic needs ai.onnx opset >= " + std::to_string(need) +
                           (per_row ? " (per-row or per-channel DequantizeLinear)" : " (DynamicQuantizeLinear)") +
                           " and the model imports opset " + std::to_string(plan.opset_from) +
                           ", which cannot be raised: " + why);
  plan.opset_to = need;
  plan.ir_to = std::max<int64_t>(model.ir_version, need >= 13 ? 7 : need >= 11 ? 6 : 5);
}

}  // namespace mcc::transforms::quantize
