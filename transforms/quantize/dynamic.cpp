// Dynamic INT8 quantization: the choice of points (see quantize/dynamic.h).
#include "transforms/quantize/dynamic.h"

#include <algorithm>
#include <map>

#include "ir/errors.h"
#include "ir/op_attrs.h"
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

/// The Gather tables of g as int8 weight points (consumers: the Gathers that read them).
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
    QPoint p = weight_point(*t, cfg.select.defaults.per_channel ? 0 : -1);
    p.consumers = readers;
    pts.weight[t->name] = pts.points.size();
    pts.points.push_back(std::move(p));
    ++pts.embeddings;
  }
}

}  // namespace

Points dynamic_points(const ir::Model& model, Selection& sel, const Config& cfg) {
  const ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version > 0 && model.ir_version < 4;
  Points pts;
  std::vector<Candidate> kept;
  auto skip = [&](const Candidate& c, const std::string& why) {
    sel.skipped.push_back({{"node", node_label(*c.node)}, {"op", c.node->op_type}, {"reason", why}});
  };
  for (const Candidate& c : sel.nodes)
    if (const std::string why = dynamic_refusal(c); why.empty()) kept.push_back(c);
    else skip(c, why);
  // Weights read by a node that stays float, or quantized along another axis, keep their readers
  // float: repeat until no reader is dropped.
  for (bool changed = true; changed;) {
    changed = false;
    std::map<const ir::Value*, std::vector<const Candidate*>> users;
    for (const Candidate& c : kept) users[c.node->input(1)].push_back(&c);
    std::vector<Candidate> next;
    for (const Candidate& c : kept) {
      const ir::Value* w = c.node->input(1);
      if (const std::string why = weight_refusal(g, ir3, w, weight_axis(c), users[w]); !why.empty()) {
        skip(c, "its weight '" + w->name + "' is " + (why.rfind("it is ", 0) == 0 ? why.substr(6) : why));
        changed = true;
      } else {
        next.push_back(c);
      }
    }
    kept.swap(next);
  }
  for (const Candidate& c : kept) {
    const std::string& a = c.node->input(0)->name;
    if (!pts.activation.count(a)) {
      QPoint p;
      p.tensor = a;
      p.role = Role::Activation;
      p.dynamic = true;
      p.dtype = ir::DType::U8;
      p.method = "dynamic";
      pts.activation[a] = pts.points.size();
      pts.points.push_back(std::move(p));
    }
    pts.points[pts.activation[a]].consumers.push_back(node_label(*c.node));
  }
  for (const Candidate& c : kept) {
    const ir::Value* w = c.node->input(1);
    if (pts.weight.count(w->name)) continue;
    pts.weight[w->name] = pts.points.size();
    pts.points.push_back(weight_point(*w, weight_axis(c)));
    ++pts.weights;
  }
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
  if (const std::string why = opset_raise_blocker(*model.graph, plan.opset_from, need); !why.empty())
    throw UnsupportedError("quantize: mode=dynamic needs ai.onnx opset >= " + std::to_string(need) +
                           (per_row ? " (per-row embedding tables)" : " (DynamicQuantizeLinear)") +
                           " and the model imports opset " + std::to_string(plan.opset_from) +
                           ", which cannot be raised: " + why);
  plan.opset_to = need;
  plan.ir_to = std::max<int64_t>(model.ir_version, need >= 13 ? 7 : need >= 11 ? 6 : 5);
}

}  // namespace mcc::transforms::quantize
