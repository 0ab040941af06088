// fp16 stage, decisions: which nodes run in the low type (float16 or bfloat16) and why. No graph
// changes here (fp16/apply.cpp does them), so a plan can also come from a saved state.
//
// For each node, in graph order, the first rule that applies decides:
//   replay record > excluded (exclude=) > control flow (If/Loop/Scan: bodies decided on their
//   own) > fp32_ops option > fp16_ops option > conditional rules > default fp32 list > default
//   fp16 list > widest list (low iff every dynamic float input is low) > unlisted (fp32, or widest
//   with unlisted=widest). With convert_embeddings (the default), a Gather/GatherElements/
//   GatherND whose data is a float32 constant read with run-time indices (an embedding table)
//   is decided low ahead of the widest rule (reason "embedding"): the table is stored in the low
//   type and the rows flow low to their consumers (a Cast back where a consumer stays fp32).
//   A node decided low whose constant float inputs overflow the low type is converted with those
//   constants clamped when they are mask fills (is_mask_fill; out_of_range=clamp_masks, the
//   default) or always (out_of_range=saturate), and otherwise kept in fp32 (reason out_of_range).
// Element types of values before the stage are declared, or inferred by ir/shape_inference, or
// (for ops it has no rule for) from the schemas.
// Which slots are float data comes from the op schemas (ir/op_schema.h): a type-constraint
// parameter converts as a whole, so the node stays type-correct. Ops without a schema, or nodes
// with more inputs/outputs than their schema allows, stay fp32 and are reported.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ir/errors.h"
#include "ir/tensor_streaming.h"
#include "ir/element_types.h"
#include "ir/shape_inference/shape_inference.h"
#include "transforms/fp16/plan.h"

namespace mcc::transforms::fp16 {

namespace {

int64_t node_opset(const ir::Model& m, const ir::Node& n) {
  return n.since_version > 0 ? n.since_version : m.opset(n.domain);
}

/// Detail of a widest node whose float inputs are all constants: it follows its consumers
/// (decided after the graph, in reverse order), so weight preprocessing (Reshape/Transpose of a
/// weight feeding a converted op) is converted offline instead of cast at run time.
constexpr const char* kConstantInputs = "constant inputs; follows its consumers";

struct Planner {
  ir::Model& m;
  Config& cfg;
  const Replay* replay;
  Plan plan;
  std::unordered_map<const ir::Value*, ir::DType> planned;      // dtype after the stage
  std::unordered_map<const ir::Value*, size_t> range_index;     // constant -> plan.ranges slot
  std::map<std::pair<std::string, int>, bool> replay_used;
  std::vector<size_t> pending;  // decisions of widest nodes fed only by constants

  ir::DType planned_dtype(const ir::Value* v) const {
    const auto it = planned.find(v);
    return it == planned.end() ? plan.orig_dtype(v) : it->second;
  }

  const RangeReport& range_of(const ir::Value* v, const ir::Tensor& t) {
    if (auto it = range_index.find(v); it != range_index.end()) return plan.ranges[it->second];
    RangeReport r;
    r.value = v->name;
    count_low_range(t, cfg.low, r);
    range_index.emplace(v, plan.ranges.size());
    plan.ranges.push_back(std::move(r));
    return plan.ranges.back();
  }

  /// A gather from a float32 constant table (input 0) with run-time indices (input 1).
  bool embedding_lookup(const ir::Node& n, const ir::OpTypeInfo& t) const {
    if (n.op_type != "Gather" && n.op_type != "GatherElements" && n.op_type != "GatherND") return false;
    if (n.inputs.size() < 2 || !n.inputs[0] || !n.inputs[1] || !t.input(0)) return false;
    const ir::Tensor* table = constant_tensor(n.inputs[0], cfg.initializer_inputs_are_constants);
    return table && table->dtype() == ir::DType::F32 &&
           !constant_tensor(n.inputs[1], cfg.initializer_inputs_are_constants) &&
           group_convertible(n, t, t.input(0)->type_param, plan, cfg.low);
  }

  /// Sets the action for an overflowing constant read by a node going low; true when the node
  /// must stay in float32 instead.
  bool overflow_keeps_fp32(RangeReport& r) const {
    if (cfg.out_of_range == OutOfRange::Saturate) {
      r.action = "saturated";
      return false;
    }
    if (cfg.out_of_range == OutOfRange::ClampMasks && is_mask_fill(r)) {
      r.action = "clamped";
      return false;
    }
    r.action = "kept_fp32";
    return true;
  }

  bool excluded(const ir::Node& n, std::string& which) {
    const FilterItem* hit = cfg.exclude.match(n, node_label(n));
    if (hit) which = hit->text;
    return hit != nullptr;
  }

  /// The rule-based choice for a node with float data (before the range check).
  std::pair<bool, std::pair<std::string, std::string>> choose(const ir::Node& n, const ir::OpTypeInfo& t) {
    using R = std::pair<std::string, std::string>;
    std::string which;
    if (excluded(n, which)) return {false, R{"excluded", which}};
    if (n.domain.empty() && fp16::control_flow_ops().count(n.op_type)) return {false, R{"control_flow", ""}};
    const bool onnx = n.domain.empty();
    if (onnx && cfg.user_fp32_ops.count(n.op_type)) return {false, R{"fp32_ops_option", ""}};
    if (onnx && cfg.user_fp16_ops.count(n.op_type)) return {true, R{"fp16_ops_option", ""}};
    for (const auto& rule : cfg.conditional)
      if (onnx) {
        std::string hit = rule.match(n);
        if (!hit.empty()) return {false, R{"conditional", hit}};
      }
    if (onnx && fp16::fp32_ops().count(n.op_type)) return {false, R{"fp32_op", ""}};
    if (onnx && fp16::fp16_ops().count(n.op_type)) return {true, R{"fp16_op", ""}};
    if (onnx && cfg.convert_embeddings && embedding_lookup(n, t)) return {true, R{"embedding", ""}};
    const bool widest = onnx && (fp16::widest_ops().count(n.op_type) || cfg.user_widest_ops.count(n.op_type));
    if (widest || cfg.unlisted == Unlisted::Widest) {
      bool any_dynamic = false, all_low = true;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const ir::Value* v = n.inputs[i];
        const ir::SlotTypes* s = t.input(i);
        if (!v || !s || constant_tensor(v, cfg.initializer_inputs_are_constants) || !group_convertible(n, t, s->type_param, plan, cfg.low)) continue;
        any_dynamic = true;
        all_low = all_low && planned_dtype(v) == cfg.low;
      }
      if (!any_dynamic) return {false, R{widest ? "widest" : "unlisted", kConstantInputs}};
      return {all_low, R{widest ? "widest" : "unlisted", ""}};
    }
    return {false, R{"unlisted", ""}};
  }

  void decide(const ir::Node& n, const std::string& path, int index) {
    const int64_t opset = node_opset(m, n);
    const ir::OpTypeInfo* t = node_types(n, opset);
    // Does the node carry float32 data the low type could replace?
    bool has_f32 = false, convertible = false;
    for (const ir::Value* v : n.inputs) has_f32 = has_f32 || (v && plan.orig_dtype(v) == ir::DType::F32);
    for (const ir::Value* v : n.outputs) has_f32 = has_f32 || (v && plan.orig_dtype(v) == ir::DType::F32);
    if (t)
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (n.inputs[i] && t->input(i) && group_convertible(n, *t, t->input(i)->type_param, plan, cfg.low))
          convertible = true;

    Decision d;
    d.node = &n;
    d.graph = path;
    d.index = index;
    const auto key = std::make_pair(path, index);
    const ReplayEntry* rec = nullptr;
    if (replay) {
      if (auto it = replay->find(key); it != replay->end()) rec = &it->second;
      if (rec && (rec->op != n.op_type || rec->name != n.name))
        throw ModelError("fp16: the state does not match the model: node #" + std::to_string(index) +
                         (path.empty() ? "" : " of graph '" + path + "'") + " is " + n.describe() +
                         ", the state recorded '" + rec->name + "' (" + rec->op + ")");
    }
    if (!has_f32 && !rec) return;
    if (!t) {
      if (rec && rec->low) throw ModelError("fp16: the state converts " + n.describe() + ", which has no schema here");
      d.reason = "unsupported_op";
      d.detail = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
      ++plan.unsupported_ops[d.detail];
    } else if (!convertible) {
      if (rec && rec->low)
        throw ModelError("fp16: the state converts " + n.describe() + ", which has no float32 data here");
      if (!rec) return;  // nothing to convert (no float-data slot the low type allows)
      d.reason = rec->reason;
      d.detail = rec->detail;
    } else if (rec) {
      d.low = rec->low;
      d.reason = rec->reason;
      d.detail = rec->detail;
    } else {
      auto [low, why] = choose(n, *t);
      d.low = low;
      d.reason = why.first;
      d.detail = why.second;
      if (t->newer_than_schemas) ++plan.newer_opset_nodes;
      if (d.low) {
        for (size_t i = 0; i < n.inputs.size(); ++i) {
          const ir::Value* v = n.inputs[i];
          const ir::Tensor* c = constant_tensor(v, cfg.initializer_inputs_are_constants);
          const ir::SlotTypes* s = t->input(i);
          if (!c || c->dtype() != ir::DType::F32 || !s || !group_convertible(n, *t, s->type_param, plan, cfg.low))
            continue;
          const RangeReport& r = range_of(v, *c);
          if (r.overflow == 0) continue;
          auto& rr = plan.ranges[range_index.at(v)];
          if (overflow_keeps_fp32(rr)) {
            d.low = false;
            d.reason = "out_of_range";
            d.detail = v->name;
            break;
          }
        }
      }
    }
    if (rec) replay_used[key] = true;
    if (!rec && d.detail == kConstantInputs) pending.push_back(plan.decisions.size());
    plan.by_node.emplace(&n, plan.decisions.size());
    plan.decisions.push_back(d);
    if (d.low && t) mark_low_outputs(n, *t);
  }

  void mark_low_outputs(const ir::Node& n, const ir::OpTypeInfo& t) {
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const ir::Value* o = n.outputs[k];
      const ir::SlotTypes* s = t.output(k);
      if (o && s && plan.orig_dtype(o) == ir::DType::F32 && group_convertible(n, t, s->type_param, plan, cfg.low))
        planned[o] = cfg.low;
    }
  }

  /// Widest nodes fed only by constants: low when every consumer of their outputs reads them in
  /// the low type (checked consumers first, so chains of them resolve).
  void resolve_pending() {
    for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
      Decision& d = plan.decisions[*it];
      const ir::Node& n = *d.node;
      const int64_t opset = node_opset(m, n);
      const ir::OpTypeInfo* t = node_types(n, opset);
      bool any = false, all_low = true;
      for (const ir::Value* o : n.outputs) {
        if (!o || plan.orig_dtype(o) != ir::DType::F32) continue;
        const auto& outs = o->owner->outputs;
        if (std::find(outs.begin(), outs.end(), o) != outs.end()) all_low = false;
        for (const ir::Use& u : o->uses) {
          any = true;
          all_low = all_low && wanted_input_dtype(*u.user, u.input_index, plan, cfg.low, node_opset(m, *u.user)) == cfg.low;
        }
      }
      if (!t || !any || !all_low) continue;
      bool in_range = true;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const ir::Value* v = n.inputs[i];
        const ir::Tensor* c = constant_tensor(v, cfg.initializer_inputs_are_constants);
        const ir::SlotTypes* s = t->input(i);
        if (!c || c->dtype() != ir::DType::F32 || !s || !group_convertible(n, *t, s->type_param, plan, cfg.low)) continue;
        range_of(v, *c);
        RangeReport& r = plan.ranges[range_index.at(v)];
        if (r.overflow == 0) continue;
        if (overflow_keeps_fp32(r)) in_range = false;
      }
      if (!in_range) continue;
      d.low = true;
      mark_low_outputs(n, *t);
    }
  }

  /// Element types before the stage: declared, else what ir/shape_inference infers, else what
  /// the schemas say (ir::schema_output_dtype) for ops the inference has no rule for.
  void infer_types(const ir::Graph& g, const ir::ShapeInference& types) {
    for (const ir::Value* v : g.inputs) plan.orig[v] = v->dtype;
    for (const ir::Value* v : g.initializers) plan.orig[v] = v->dtype;
    for (const ir::Node* n : g.nodes()) {
      const ir::OpTypeInfo* t = node_types(*n, node_opset(m, *n));
      for (size_t k = 0; k < n->outputs.size(); ++k) {
        const ir::Value* o = n->outputs[k];
        if (!o) continue;
        ir::DType d = o->dtype;
        if (d == ir::DType::Undefined) d = types.of(o).dtype;
        if (d == ir::DType::Undefined)
          d = ir::schema_output_dtype(*n, k, t, [this](const ir::Value* v) { return plan.orig_dtype(v); });
        plan.orig[o] = d;
      }
      for (const ir::Graph* sg : n->subgraphs()) infer_types(*sg, types);
    }
  }

  void plan_graph(const ir::Graph& g, const std::string& path, bool is_main) {
    for (const ir::Value* v : g.inputs)
      if (is_main && !cfg.keep_io && plan.orig_dtype(v) == ir::DType::F32 && v->type_passthrough.bytes.empty() &&
          !constant_tensor(v, cfg.initializer_inputs_are_constants))
        planned[v] = cfg.low;
    const auto& nodes = g.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      decide(*nodes[i], path, static_cast<int>(i));
      for (const auto& s : nodes[i]->subgraph_slots())
        plan_graph(*s.graph, (path.empty() ? "" : path + "/") + std::to_string(i) + "." + s.label(), false);
    }
  }
};

}  // namespace

const ir::OpTypeInfo* node_types(const ir::Node& n, int64_t opset) { return ir::fitting_schema(n, opset); }

const ir::Tensor* constant_tensor(const ir::Value* v, bool initializer_inputs) {
  if (!v) return nullptr;
  if (v->initializer && (!v->is_graph_input || initializer_inputs)) return &*v->initializer;
  const ir::Node* p = v->producer;
  if (p && p->op_type == "Constant" && p->domain.empty()) return p->attr_tensor("value");
  return nullptr;
}

bool group_convertible(const ir::Node& n, const ir::OpTypeInfo& t, const std::string& param,
                       const Plan& plan, ir::DType low) {
  bool has_input = false, has_f32 = false;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ir::SlotTypes* s = t.input(i);
    if (!s || !n.inputs[i] || s->type_param != param) continue;
    if (!s->allows_float_and(low) || !s->tensor_only) return false;
    has_input = true;
    const ir::DType d = plan.orig_dtype(n.inputs[i]);
    if (d == ir::DType::F32) has_f32 = true;
    else if (d != ir::DType::Undefined) return false;
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const ir::SlotTypes* s = t.output(k);
    if (!s || !n.outputs[k] || s->type_param != param) continue;
    if (!s->allows_float_and(low) || !s->tensor_only) return false;
    const ir::DType d = plan.orig_dtype(n.outputs[k]);
    if (d != ir::DType::F32 && d != ir::DType::Undefined) return false;
  }
  return has_input && has_f32;
}

ir::DType wanted_input_dtype(const ir::Node& n, size_t i, const Plan& plan, ir::DType low, int64_t opset) {
  const ir::Value* v = n.inputs[i];
  const ir::DType orig = plan.orig_dtype(v);
  const Decision* d = plan.find(&n);
  if (!d || !d->low) return orig;
  const ir::OpTypeInfo* t = node_types(n, opset);
  const ir::SlotTypes* s = t ? t->input(i) : nullptr;
  if (!s || !group_convertible(n, *t, s->type_param, plan, low)) return orig;
  return low;
}

Plan make_plan(ir::Model& m, Config& cfg, const Replay* replay) {
  Planner p{m, cfg, replay, {}, {}, {}, {}, {}};
  p.infer_types(*m.graph, ir::ShapeInference(m));
  p.plan_graph(*m.graph, "", true);
  p.resolve_pending();
  if (replay)
    for (const auto& [key, e] : *replay)
      if (!p.replay_used.count(key))
        throw ModelError("fp16: the state does not match the model: it records node '" + e.name + "' (" + e.op +
                         ") at #" + std::to_string(key.second) +
                         (key.first.empty() ? "" : " of graph '" + key.first + "'") + ", which has no float data here");
  return std::move(p.plan);
}

namespace {

/// Converts src[begin, end) into dst (when not null), counting into `r` (when not null).
template <class L>
void convert_range(const float* src, L* dst, int64_t begin, int64_t end, bool saturate, RangeReport* r) {
  const float maxv = static_cast<float>(std::numeric_limits<L>::max());
  for (int64_t i = begin; i < end; ++i) {
    const float x = src[i];
    L y = static_cast<L>(x);
    const float back = static_cast<float>(y);
    if (std::isfinite(x) && !std::isfinite(back)) {
      if (r) {
        if (r->overflow > 0 && x != (x < 0 ? r->overflow_min : r->overflow_max)) r->one_overflow_value = false;
        if (x < 0) ++r->overflow_negative;
        if (x < 0) r->overflow_min = std::min(r->overflow_min, static_cast<double>(x));
        else r->overflow_max = std::max(r->overflow_max, static_cast<double>(x));
        ++r->overflow;
      }
      if (saturate) y = static_cast<L>(x > 0 ? maxv : -maxv);
    } else if (x != 0.0f && back == 0.0f) {
      if (r) ++r->underflow;
    }
    if (r && std::isfinite(x)) r->max_abs = std::max(r->max_abs, static_cast<double>(std::fabs(x)));
    if (dst) dst[i] = y;
  }
}

/// Calls f(tag) with the low type's element type (f16 or bf16).
template <class F>
void with_low_type(ir::DType low, F&& f) {
  if (low == ir::DType::F16) f(ir::TypeTag<f16>{});
  else f(ir::TypeTag<bf16>{});
}

}  // namespace

ir::Tensor to_low(const ir::Tensor& t, ir::DType low, bool saturate, RangeReport* r) {
  ir::Tensor out = ir::Tensor::allocate(low, t.dims());
  with_low_type(low, [&](auto tag) {
    using L = typename decltype(tag)::type;
    convert_range(t.data<float>().data(), reinterpret_cast<L*>(out.mutable_raw()), 0, t.numel(), saturate, r);
  });
  return out;
}

ir::Tensor to_low_consuming(ir::Tensor&& t, ir::DType low, bool saturate, RangeReport* r) {
  if (t.dtype() != ir::DType::F32) throw InternalError("fp16: only float32 constants are converted");
  ir::Tensor out = ir::Tensor::allocate(low, t.dims());
  with_low_type(low, [&](auto tag) {
    using L = typename decltype(tag)::type;
    L* dst = reinterpret_cast<L*>(out.mutable_raw());
    ir::consume_in_chunks(std::move(t), [&](const std::byte* data, int64_t b, int64_t e) {
      convert_range(reinterpret_cast<const float*>(data), dst, b, e, saturate, r);
    });
  });
  return out;
}

void count_low_range(const ir::Tensor& t, ir::DType low, RangeReport& r) {
  with_low_type(low, [&](auto tag) {
    using L = typename decltype(tag)::type;
    convert_range<L>(t.data<float>().data(), nullptr, 0, t.numel(), false, &r);
  });
}

}  // namespace mcc::transforms::fp16
