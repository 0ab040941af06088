// fp16 stage, rewriting: carries out a Plan (fp16/plan.cpp).
//
//   - A node decided low gets the low type on every slot of its convertible type parameters;
//     its float32 outputs there become low.
//   - Every input whose type differs from what its consumer wants gets a Cast, one per
//     (graph, value, type), placed before the first consumer that needs it. A value that is
//     itself a Cast this stage inserted is not cast back: the consumer reads the original value.
//   - Constants (initializers that are not graph inputs, Constant nodes) are converted offline:
//     in place (same name) when every consumer wants the low type, otherwise a low copy named
//     "<name>_fp16" / "<name>_bf16" serves the low consumers and the float32 original stays.
//     No runtime Cast on weights.
//   - Graph inputs keep their type with keep_io=true (a Cast after them); with keep_io=false
//     float32 inputs and outputs of the main graph become low. A graph output whose producer
//     changed type gets a Cast that takes over the output's name (the producer's value is
//     renamed), so graph input and output names never change. Subgraph inputs/outputs always
//     keep their declared types.
#include <limits>
#include <set>
#include <tuple>

#include "ir/errors.h"
#include "ir/float16.h"
#include "transforms/fp16/plan.h"

namespace mcc::transforms::fp16 {

namespace {

const char* suffix(ir::DType d) {
  switch (d) {
    case ir::DType::F16: return "_fp16";
    case ir::DType::BF16: return "_bf16";
    default: return "_fp32";
  }
}

struct Applier {
  ir::Model& m;
  const Plan& plan;
  const Config& cfg;
  ApplyStats st;
  std::set<std::string> value_names, node_names;
  std::map<std::tuple<const ir::Graph*, const ir::Value*, ir::DType>, ir::Value*> casts;
  std::set<const ir::Node*> inserted;
  std::unordered_map<const ir::Value*, ir::Value*> low_const;
  std::unordered_map<const ir::Value*, int> const_wants;  // bit 1: low consumers, bit 2: others

  bool is_f32_constant(const ir::Value* v) const {
    const ir::Tensor* c = constant_tensor(v, cfg.initializer_inputs_are_constants);
    return c && c->dtype() == ir::DType::F32;
  }
  ir::DType cur(const ir::Value* v) const {
    return v->dtype != ir::DType::Undefined ? v->dtype : plan.orig_dtype(v);
  }
  int64_t opset_of(const ir::Node& n) const { return n.since_version > 0 ? n.since_version : m.opset(n.domain); }

  std::string fresh(std::set<std::string>& used, const std::string& hint) {
    std::string s = hint;
    for (int i = 1; used.count(s); ++i) s = hint + "_" + std::to_string(i);
    used.insert(s);
    return s;
  }

  void collect(const ir::Graph& g) {
    for (const ir::Value* v : g.values()) value_names.insert(v->name);
    for (const ir::Node* n : g.nodes()) {
      if (!n->name.empty()) node_names.insert(n->name);
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const ir::Value* v = n->inputs[i];
        if (!is_f32_constant(v)) continue;
        const ir::DType w = wanted_input_dtype(*n, i, plan, cfg.low, opset_of(*n));
        const_wants[v] |= w == cfg.low ? 1 : 2;
      }
      for (ir::Graph* sg : n->subgraphs()) collect(*sg);
    }
    for (const ir::Value* v : g.outputs)
      if (constant_tensor(v, cfg.initializer_inputs_are_constants)) const_wants[v] |= 2;
  }

  ir::Value* cast_of(ir::Value* v, ir::DType to, ir::Graph& g, const ir::Node* before) {
    const auto key = std::make_tuple(&g, static_cast<const ir::Value*>(v), to);
    if (auto it = casts.find(key); it != casts.end()) return it->second;
    if (v->producer && inserted.count(v->producer) && v->producer->inputs[0] && cur(v->producer->inputs[0]) == to)
      return v->producer->inputs[0];
    const std::string out = fresh(value_names, v->name + suffix(to));
    ir::Node& c = g.add_node("Cast", "", fresh(node_names, out), {v}, {out}, before);
    c.since_version = static_cast<int>(m.opset(""));
    c.set_attr(ir::Attribute{"to", ir::AttrKind::Int, static_cast<int64_t>(to), "", "", ""});
    c.outputs[0]->dtype = to;
    c.outputs[0]->shape = v->shape;
    inserted.insert(&c);
    ++st.casts;
    casts.emplace(key, c.outputs[0]);
    return c.outputs[0];
  }

  ir::Value* low_constant(ir::Value* v) {
    if (auto it = low_const.find(v); it != low_const.end()) return it->second;
    const ir::Tensor& src = *constant_tensor(v, cfg.initializer_inputs_are_constants);
    // The plan lets an overflowing constant reach a low consumer only when it is to be clamped
    // (a mask fill, or any constant with out_of_range=saturate); a replayed plan likewise.
    const bool saturate = cfg.out_of_range != OutOfRange::KeepFp32;
    RangeReport r;
    const std::string name = src.name, doc = src.doc_string;
    const bool was_external = src.external.has_value();
    // An initializer converted in place is read once and released as it goes (a model of one
    // huge tensor then peaks near its fp32 size, not fp32 + fp16).
    const bool in_place = const_wants[v] == 1 && v->initializer;
    ir::Tensor t = in_place ? to_low_consuming(std::move(*v->initializer), cfg.low, saturate, &r)
                            : to_low(src, cfg.low, saturate, &r);
    if (saturate && r.overflow > 0) {
      st.values_saturated += r.overflow;
      const double top = cfg.low == ir::DType::F16 ? static_cast<double>(std::numeric_limits<f16>::max())
                                                   : static_cast<double>(std::numeric_limits<bf16>::max());
      const int64_t neg = r.overflow_negative, pos = r.overflow - r.overflow_negative;
      if (neg > 0) st.clamped.push_back({v->name, neg, r.overflow_min, -top});
      if (pos > 0) st.clamped.push_back({v->name, pos, r.overflow_max, top});
    }
    ir::Value* result = v;
    if (const_wants[v] == 1) {
      t.name = name;
      t.doc_string = doc;
      if (was_external) t.external = ir::ExternalRef{};  // rewritten on save; the old checksum is stale
      if (v->initializer) {
        v->initializer = std::move(t);
      } else {
        v->producer->set_attr(ir::Attribute{"value", ir::AttrKind::Tensor, std::move(t), "", "", ""});
      }
      v->dtype = cfg.low;
      ++st.initializers_converted;
    } else {
      ir::Graph& owner = *v->owner;
      result = &owner.add_initializer(fresh(value_names, v->name + suffix(cfg.low)), std::move(t));
      if (v->is_graph_input) {  // IR < 4: every initializer is listed among the graph inputs
        result->is_graph_input = true;
        result->has_type = true;
        owner.inputs.push_back(result);
      }
      ++st.initializers_copied;
    }
    low_const.emplace(v, result);
    return result;
  }

  void fix_output(ir::Graph& g, size_t idx, ir::DType want) {
    ir::Value* v = g.outputs[idx];
    if (!v->producer) return;  // an input or initializer passed straight through keeps its type
    const auto key = std::make_tuple(static_cast<const ir::Graph*>(&g), static_cast<const ir::Value*>(v), want);
    if (auto it = casts.find(key); it != casts.end() && it->second->name == v->name) {
      g.outputs[idx] = it->second;
      return;
    }
    const std::string name = v->name;
    value_names.insert(name);
    g.rename_value(*v, fresh(value_names, name + suffix(cur(v))));
    ir::Node& c = g.add_node("Cast", "", fresh(node_names, name + "_cast"), {v}, {name});
    c.since_version = static_cast<int>(m.opset(""));
    c.set_attr(ir::Attribute{"to", ir::AttrKind::Int, static_cast<int64_t>(want), "", "", ""});
    ir::Value* w = c.outputs[0];
    w->dtype = want;
    w->shape = v->shape;
    w->has_type = v->has_type;
    w->type_passthrough = std::move(v->type_passthrough);
    v->type_passthrough = {};
    w->doc_string = std::move(v->doc_string);
    w->metadata_props = std::move(v->metadata_props);
    w->proto_passthrough = std::move(v->proto_passthrough);
    v->doc_string.clear();
    v->metadata_props.clear();
    v->proto_passthrough.clear();
    for (auto& o : g.outputs)
      if (o == v) o = w;
    inserted.insert(&c);
    ++st.casts;
    casts.emplace(key, w);
  }

  void apply_graph(ir::Graph& g, bool is_main) {
    if (is_main && !cfg.keep_io)
      for (ir::Value* v : g.inputs)
        if (plan.orig_dtype(v) == ir::DType::F32 && v->type_passthrough.bytes.empty() &&
            !constant_tensor(v, cfg.initializer_inputs_are_constants)) {
          v->dtype = cfg.low;
          if (v->initializer) v->initializer = to_low(*v->initializer, cfg.low, true, nullptr);
          ++st.io_retyped;
        }
    const std::vector<ir::Node*> nodes = g.nodes();
    for (ir::Node* n : nodes) {
      const int64_t opset = opset_of(*n);
      // Everything is decided from the node as it was before this stage, then rewritten.
      std::vector<ir::DType> want(n->inputs.size(), ir::DType::Undefined);
      for (size_t i = 0; i < n->inputs.size(); ++i)
        if (n->inputs[i]) want[i] = wanted_input_dtype(*n, i, plan, cfg.low, opset);
      std::vector<ir::Value*> retype;
      const Decision* d = plan.find(n);
      if (d && d->low) {
        const ir::OpTypeInfo* t = node_types(*n, opset);
        for (size_t k = 0; t && k < n->outputs.size(); ++k) {
          ir::Value* o = n->outputs[k];
          const ir::SlotTypes* s = t->output(k);
          if (o && s && plan.orig_dtype(o) == ir::DType::F32 && group_convertible(*n, *t, s->type_param, plan, cfg.low))
            retype.push_back(o);
        }
      }
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        ir::Value* v = n->inputs[i];
        if (!v || want[i] == ir::DType::Undefined || want[i] == cur(v)) continue;
        ir::Value* r = nullptr;
        if (want[i] == cfg.low && plan.orig_dtype(v) == ir::DType::F32 && is_f32_constant(v)) r = low_constant(v);
        if (!r || cur(r) != want[i]) r = cast_of(v, want[i], g, n);
        g.set_input(*n, i, r);
      }
      for (ir::Value* o : retype) o->dtype = cfg.low;
    }
    for (size_t idx = 0; idx < g.outputs.size(); ++idx) {
      ir::Value* v = g.outputs[idx];
      const ir::DType orig = plan.orig_dtype(v);
      if (orig == ir::DType::Undefined) continue;
      const bool retype = is_main && !cfg.keep_io && orig == ir::DType::F32 && v->type_passthrough.bytes.empty();
      const ir::DType want = retype ? cfg.low : orig;
      if (cur(v) != want) fix_output(g, idx, want);
      if (retype) ++st.io_retyped;
    }
    for (ir::Node* n : nodes)
      for (ir::Graph* sg : n->subgraphs()) apply_graph(*sg, false);
  }
};

}  // namespace

ApplyStats apply_plan(ir::Model& m, const Plan& plan, const Config& cfg) {
  Applier a{m, plan, cfg, {}, {}, {}, {}, {}, {}, {}};
  a.collect(*m.graph);
  a.apply_graph(*m.graph, true);
  return a.st;
}

}  // namespace mcc::transforms::fp16
