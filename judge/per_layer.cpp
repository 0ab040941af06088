// Per-layer diagnosis (see per_layer.h for the metrics, the introduced-error formula and the
// exclusion rule).
#include "judge/per_layer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cctype>
#include <numeric>
#include <set>

#include "backends/compare.h"
#include "ir/dims_text.h"
#include "ir/errors.h"
#include "judge/output_stats.h"
#include "judge/passthrough_ops.h"

namespace mcc::judge {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Exclusion rule thresholds (per_layer.h).
constexpr double kOutlierFactor = 10.0;       // introduced noise >= 10x the median quantized layer
constexpr double kMaxIntroducedSnrDb = 30.0;  // a layer adding < 0.1 % noise power is never suggested
constexpr double kLoneWorstSnrDb = 20.0;      // no outlier: suggest the worst when it adds > 1 %

bool is_dequantize(const ir::Node& n) { return n.is("DequantizeLinear") || n.is("DequantizeLinear", "com.microsoft"); }

std::string node_label(const ir::Node& n) {
  if (!n.name.empty() || n.outputs.empty() || !n.outputs[0]) return n.name;
  return n.outputs[0]->name;
}

bool is_float(ir::DType dt) { return dt == ir::DType::F32 || dt == ir::DType::F16 || dt == ir::DType::BF16 || dt == ir::DType::F64; }

ir::Tensor to_f32(const ir::Tensor& t) {
  if (t.dtype() == ir::DType::F32) return t.clone();
  ir::Tensor out = ir::Tensor::allocate(ir::DType::F32, t.dims());
  auto dst = out.mutable_data<float>();
  ir::dispatch<MCC_FLOAT_DTYPES>(t.dtype(), "per-layer compare", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto src = t.data<T>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<float>(static_cast<double>(src[i]));
  });
  return out;
}

using ir::dims_text;



double nsr_to_db(double nsr) {
  if (nsr <= 0) return kInf;
  if (std::isinf(nsr)) return -kInf;
  return -10.0 * std::log10(nsr);
}

}  // namespace

double LayerStat::nsr() const {
  if (noise == 0) return 0;
  if (signal == 0) return kInf;
  return noise / signal;
}
double LayerStat::snr_db() const { return nsr_to_db(nsr()); }
double LayerStat::inherited_snr_db() const { return nsr_to_db(inherited_nsr); }
double LayerStat::introduced_snr_db() const { return nsr_to_db(introduced_nsr); }

void rank_layers(std::vector<LayerStat>& layers) {
  std::map<std::string, double, std::less<>> nsr_by_name;
  for (const auto& l : layers) nsr_by_name[l.value] = l.nsr();
  for (auto& l : layers) {
    l.inherited_nsr = 0;
    for (const auto& in : l.inputs) {
      auto it = nsr_by_name.find(in);
      if (it != nsr_by_name.end()) l.inherited_nsr = std::max(l.inherited_nsr, it->second);
    }
    const double out = l.nsr();
    if (std::isinf(out) && std::isinf(l.inherited_nsr)) l.introduced_nsr = 0;
    else l.introduced_nsr = std::max(0.0, out - l.inherited_nsr);
  }
  std::vector<size_t> by_intro(layers.size());
  std::iota(by_intro.begin(), by_intro.end(), size_t{0});
  std::stable_sort(by_intro.begin(), by_intro.end(), [&](size_t a, size_t b) {
    if (layers[a].introduced_nsr != layers[b].introduced_nsr) return layers[a].introduced_nsr > layers[b].introduced_nsr;
    return layers[a].order < layers[b].order;
  });
  for (size_t i = 0; i < by_intro.size(); ++i) layers[by_intro[i]].introduced_rank = static_cast<int>(i + 1);
  std::stable_sort(layers.begin(), layers.end(), [](const LayerStat& a, const LayerStat& b) {
    const double na = a.nsr(), nb = b.nsr();
    if (na != nb) return na > nb;
    return a.order < b.order;
  });
  for (size_t i = 0; i < layers.size(); ++i) layers[i].rank = static_cast<int>(i + 1);
}

std::vector<std::string> choose_exclusions(const std::vector<LayerStat>& layers, size_t max_exclude) {
  std::vector<const LayerStat*> q;
  for (const auto& l : layers)
    if (!l.exclude_targets.empty()) q.push_back(&l);
  if (q.empty() || max_exclude == 0) return {};
  std::vector<double> intro;
  for (const auto* l : q) intro.push_back(l->introduced_nsr);
  std::sort(intro.begin(), intro.end());
  const double median = intro.size() % 2 ? intro[intro.size() / 2]
                                         : 0.5 * (intro[intro.size() / 2 - 1] + intro[intro.size() / 2]);
  std::stable_sort(q.begin(), q.end(), [](const LayerStat* a, const LayerStat* b) {
    if (a->introduced_nsr != b->introduced_nsr) return a->introduced_nsr > b->introduced_nsr;
    return a->order < b->order;
  });
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto take = [&](const LayerStat& l) {
    for (const auto& t : l.exclude_targets)
      if (out.size() < max_exclude && seen.insert(t).second) out.push_back(t);
  };
  for (const auto* l : q) {
    const bool stands_out = l->introduced_nsr > 0 && l->introduced_snr_db() < kMaxIntroducedSnrDb &&
                            l->introduced_nsr >= kOutlierFactor * median;
    if (stands_out) take(*l);
  }
  if (out.empty() && q.front()->introduced_snr_db() < kLoneWorstSnrDb) take(*q.front());
  return out;
}

/// `name` as a node-filter item that matches that name: regex metacharacters escaped (the filter
/// reads every item as a regex too, see transforms/common/node_filter.h), except '.', which
/// matches itself and keeps the usual exported names ("/features.0/Conv") readable.
static std::string exact_name_item(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::string_view("^$|()[]{}*+?\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string exclusion_stage_option(const std::vector<std::string>& nodes) {
  std::string value;
  bool quote = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string item = exact_name_item(nodes[i]);
    value += (i ? "," : "") + item;
    for (char c : item)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == ':' || c == '-'))
        quote = true;
  }
  if (quote) {  // the spec grammar's quoted form: '"' and '\\' escaped with a backslash
    std::string q = "\"";
    for (char c : value) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    value = q + "\"";
  }
  return "quantize{exclude=" + value + "}";
}

PerLayerComparator::PerLayerComparator(const ir::Model& model, const ir::Model& reference)
    : model_(model), reference_(reference) {
  const ir::Graph& gm = *model.graph;
  const ir::Graph& gr = *reference.graph;
  // Values computed from constants only (a weight reshaped at run time) are not layers: their
  // error is part of the layer that reads them.
  std::set<const ir::Value*> dynamic;
  for (const ir::Value* v : gr.inputs)
    if (!v->is_constant()) dynamic.insert(v);
  for (const ir::Node* n : gr.nodes()) {
    bool dyn = false;
    for (const ir::Value* x : n->inputs) dyn = dyn || (x && (dynamic.count(x) || x->owner != &gr));
    if (dyn)
      for (const ir::Value* o : n->outputs)
        if (o) dynamic.insert(o);
  }
  // Shared: a value computed by a node in both main graphs under the same name.
  auto shared_in_ref = [&](const std::string& name) {
    const ir::Value* r = gr.find_value(name);
    return r && r->producer && !r->is_constant() && dynamic.count(r);
  };
  std::set<std::string> shared;
  for (const ir::Node* n : gm.nodes())
    for (const ir::Value* o : n->outputs)
      if (o && shared_in_ref(o->name)) shared.insert(o->name);
  if (shared.empty())
    throw UsageError("--per-layer: the model and the reference share no intermediate tensor by name; "
                     "compare a model with the one it was converted from");

  // The compute node behind a value: Q/DQ/Cast chains are skipped until a shared value.
  auto origin = [&](const ir::Value* v) {
    const ir::Node* n = v->producer;
    while (n && is_passthrough(*n) && n->input(0) && !n->input(0)->is_constant() && n->input(0)->producer &&
           !shared.count(n->input(0)->name))
      n = n->input(0)->producer;
    return n;
  };
  // Shared values and graph inputs a node reads, through Q/DQ/Cast and unshared nodes.
  auto upstream = [&](const ir::Node& node) {
    std::vector<std::string> out;
    std::set<const ir::Value*> seen;
    std::vector<const ir::Value*> stack;
    for (const ir::Value* x : node.inputs) stack.push_back(x);
    while (!stack.empty()) {
      const ir::Value* x = stack.back();
      stack.pop_back();
      if (!x || x->is_constant() || !seen.insert(x).second || x->owner != &gm) continue;
      if (shared.count(x->name) || x->is_graph_input || !x->producer) {
        if (std::find(out.begin(), out.end(), x->name) == out.end()) out.push_back(x->name);
        continue;
      }
      for (const ir::Value* y : x->producer->inputs) stack.push_back(y);
    }
    std::sort(out.begin(), out.end());
    return out;
  };

  // A quantized node reads a dequantized weight, or reads only dequantized activations (Add,
  // Concat, ... in op_types). Reading one dequantized activation is not enough: every consumer of
  // a quantized activation reads the dequantized value, quantized or not.
  auto quantized_node = [&](const ir::Node& nd) {
    if (is_passthrough(nd)) return false;
    int activations = 0, dequantized = 0;
    for (const ir::Value* x : nd.inputs) {
      if (!x || x->is_constant()) continue;
      const bool dq = x->producer && is_dequantize(*x->producer);
      if (dq && x->producer->input(0) && x->producer->input(0)->is_constant()) return true;  // a weight
      ++activations;
      dequantized += dq ? 1 : 0;
    }
    return activations > 0 && dequantized == activations;
  };
  int64_t order = 0;
  for (const ir::Node* n : gm.nodes()) {
    ++order;
    for (const ir::Value* o : n->outputs) {
      if (!o || !shared.count(o->name)) continue;
      LayerStat s;
      s.value = o->name;
      s.order = order;
      const ir::Node* c = origin(o);
      s.node = node_label(*c);
      s.op = c->op_type;
      s.inputs = upstream(*c);
      auto target = [&](const ir::Node& n) {
        const std::string t = node_label(n);
        if (!t.empty() && std::find(s.exclude_targets.begin(), s.exclude_targets.end(), t) == s.exclude_targets.end())
          s.exclude_targets.push_back(t);
      };
      if (quantized_node(*c)) target(*c);
      if (is_dequantize(*n) && n->input(0) && !n->input(0)->is_constant())
        for (const auto& u : o->uses)
          if (u.user->owner == &gm && quantized_node(*u.user)) target(*u.user);
      const ir::Node* rp = gr.find_value(o->name)->producer;
      s.ref_node = node_label(*rp);
      s.ref_op = rp->op_type;
      index_[s.value] = stats_.size();
      stats_.push_back(std::move(s));
    }
  }
}

void PerLayerComparator::attach(backends::Executor& model_exec, backends::Executor& reference_exec) {
  model_exec.set_observer([this](const ir::Node&, const ir::Value& v, const backends::RValue& rv) { on_model_value(v, rv); });
  reference_exec.set_observer(
      [this](const ir::Node&, const ir::Value& v, const backends::RValue& rv) { on_reference_value(v, rv); });
}

void PerLayerComparator::on_model_value(const ir::Value& v, const backends::RValue& rv) {
  if (v.owner != model_.graph.get() || !index_.count(v.name)) return;
  if (rv.kind != backends::RValue::Kind::Tensor || !is_float(rv.tensor.dtype())) {
    skipped_[v.name] = rv.kind == backends::RValue::Kind::Tensor ? "not a float tensor (" + ir::dtype_name(rv.tensor.dtype()) + ")"
                                                                  : "not a tensor";
    return;
  }
  pending_[v.name] = to_f32(rv.tensor);
}

void PerLayerComparator::on_reference_value(const ir::Value& v, const backends::RValue& rv) {
  if (v.owner != reference_.graph.get()) return;
  auto it = pending_.find(v.name);
  if (it == pending_.end()) return;
  const ir::Tensor got = std::move(it->second);
  pending_.erase(it);
  if (rv.kind != backends::RValue::Kind::Tensor || !is_float(rv.tensor.dtype())) {
    skipped_[v.name] = "the reference's tensor is not a float tensor";
    return;
  }
  const ir::Tensor want = to_f32(rv.tensor);
  if (got.dims() != want.dims()) {
    skipped_[v.name] = "shape " + dims_text(got.dims()) + " vs reference " + dims_text(want.dims());
    return;
  }
  const auto m = backends::compare_tensors(got, want, backends::Tolerance{});
  LayerStat& s = stats_[index_.at(v.name)];
  const auto a = got.data<float>(), b = want.data<float>();
  double sig = 0, noise = 0;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (size_t i = 0; i < b.size(); ++i) {
    if (std::isfinite(b[i])) lo = std::min(lo, b[i]), hi = std::max(hi, b[i]);
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
    const double d = static_cast<double>(a[i]) - b[i];
    sig += static_cast<double>(b[i]) * b[i];
    noise += d * d;
  }
  ++s.samples;
  s.signal += sig;
  s.noise += noise;
  s.worst_snr_db = std::min(s.worst_snr_db, m.snr_db);
  s.min_cosine = std::min(s.min_cosine, m.cosine);
  s.max_abs = std::max(s.max_abs, m.max_abs);
  s.nan_inf_mismatch += m.nan_inf_mismatch;
  if (lo <= hi) s.ref_min = std::min<double>(s.ref_min, lo), s.ref_max = std::max<double>(s.ref_max, hi);
}

void PerLayerComparator::end_sample() {
  ++samples_;
  pending_.clear();
}

PerLayerReport PerLayerComparator::finish(size_t max_exclude) const {
  PerLayerReport r;
  r.samples = samples_;
  for (const auto& s : stats_)
    if (s.samples > 0) r.layers.push_back(s);
  for (const auto& [name, why] : skipped_) r.skipped.push_back(name + ": " + why);
  rank_layers(r.layers);
  r.exclude = choose_exclusions(r.layers, max_exclude);
  if (!r.exclude.empty()) r.stage_option = exclusion_stage_option(r.exclude);
  return r;
}

nlohmann::ordered_json per_layer_json(const PerLayerReport& r, size_t top) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const auto& l : r.layers) {
    if (top && layers.size() >= top) break;
    layers.push_back({{"rank", l.rank}, {"value", l.value}, {"node", l.node}, {"op", l.op},
                      {"ref_node", l.ref_node}, {"ref_op", l.ref_op}, {"quantized", !l.exclude_targets.empty()},
                      {"exclude_targets", l.exclude_targets},
                      {"snr_db", json_number(l.snr_db())}, {"worst_snr_db", json_number(l.worst_snr_db)},
                      {"min_cosine", json_number(l.min_cosine)}, {"max_abs", json_number(l.max_abs)},
                      {"inherited_snr_db", json_number(l.inherited_snr_db())},
                      {"introduced_snr_db", json_number(l.introduced_snr_db())},
                      {"introduced_rank", l.introduced_rank}, {"inputs", l.inputs},
                      {"nan_inf_mismatch", l.nan_inf_mismatch}, {"samples", l.samples}});
  }
  return {{"samples", r.samples},
          {"aggregation", "snr_db: signal and noise power summed over samples; worst_snr_db, min_cosine, "
                          "max_abs: worst sample; introduced = noise-to-signal ratio added by the layer over "
                          "its worst input"},
          {"compared", r.layers.size()}, {"layers", layers}, {"skipped", r.skipped},
          {"exclude", r.exclude}, {"stage_option", r.stage_option}};
}


}  // namespace mcc::judge
