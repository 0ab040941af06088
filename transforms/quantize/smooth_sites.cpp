// Sites where a per-channel scale moves between an activation and its readers' weights: finding
// them, applying scales, replaying a record (see quantize/smooth_sites.h).
#include "transforms/quantize/smooth_sites.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "transforms/quantize/points.h"

namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

bool is_f32_constant(const ir::Value* v, bool ir3) {
  return v && v->initializer && v->initializer->dtype() == ir::DType::F32 && (ir3 || !v->is_graph_input);
}

std::map<const ir::Node*, const Candidate*> selected_nodes(const Selection& sel) {
  std::map<const ir::Node*, const Candidate*> selected;
  for (const auto& c : sel.nodes) selected[c.node] = &c;
  return selected;
}

/// Why `reader` cannot take the scales of an activation with `channels` channels read at its
/// input `index` ("" = it can).
std::string reader_refusal(const ir::Graph& g, bool ir3, const ir::Node& reader, int index, int64_t channels,
                           const std::map<const ir::Node*, const Candidate*>& selected) {
  std::string who = node_label(reader);  // 'name' (Op)
  who.insert(0, 1, '\'');
  who += "' (" + reader.op_type + ")";
  if (reader.owner != &g) return "read inside a subgraph by " + who;
  if (reader.op_type != "MatMul" && reader.op_type != "Gemm") return "read by " + who + ", which is not a MatMul or Gemm";
  const auto c = selected.find(&reader);
  if (c == selected.end()) return "read by " + who + ", which is not quantized";
  if (index != 0) return "read by " + who + " at input " + std::to_string(index) + ", not as its activation";
  if (reader.op_type == "Gemm" && reader.attr_int("transA", 0) != 0) return "read by " + who + " with transA";
  const ir::Value* w = reader.input(1);
  if (c->second->slots.weight != 1 || !is_f32_constant(w, ir3)) return "read by " + who + ", whose weight is not a float32 constant";
  const auto& d = w->initializer->dims();
  if (d.size() != 2) return "read by " + who + ", whose weight is not a matrix";
  const int64_t k = transposed_weight(reader) ? d[1] : d[0];
  if (k != channels)
    return "read by " + who + ", whose weight has " + std::to_string(k) + " input channels for " + std::to_string(channels);
  if (is_graph_output(g, w)) return "the weight '" + w->name + "' of " + who + " is a graph output";
  return "";
}

/// Why the readers of site `s` cannot take its scales through their weights ("" = they can): a
/// weight also read by a node outside the site, or read both as [K, N] and [N, K].
std::string shared_weight_refusal(const ScaleSite& s) {
  const std::set<const ir::Node*> readers(s.readers.begin(), s.readers.end());
  for (const ir::Node* r : s.readers) {
    const ir::Value* w = r->input(1);
    for (const ir::Use& u : w->uses) {
      if (!readers.count(u.user))
        return "the weight '" + w->name + "' of '" + node_label(*r) + "' is also read by '" + node_label(*u.user) + "'";
      if (transposed_weight(*u.user) != transposed_weight(*r)) return "the weight '" + w->name + "' is read both as [K, N] and as [N, K]";
    }
  }
  return "";
}

/// Why `ln` cannot be smoothed ("" = it can); fills `site` when it can.
std::string layer_norm_refusal(const ir::Graph& g, bool ir3, ir::Node& ln,
                               const std::map<const ir::Node*, const Candidate*>& selected, ScaleSite& site) {
  const ir::Value* x = ln.input(0);
  const ir::Value* y = ln.outputs.empty() ? nullptr : ln.outputs[0];
  if (!x || !y) return "no input or output";
  const int64_t axis = ln.attr_int("axis", -1);
  if (axis != -1) {
    if (!x->shape.dims) return "axis=" + std::to_string(axis) + " on an input of unknown rank";
    if (axis != static_cast<int64_t>(x->shape.dims->size()) - 1)
      return "normalizes over more than the last axis (axis=" + std::to_string(axis) + ")";
  }
  const ir::Value* scale = ln.input(1);
  if (!is_f32_constant(scale, ir3) || scale->initializer->rank() != 1) return "its scale is not a float32 constant vector";
  const int64_t channels = scale->initializer->numel();
  const ir::Value* bias = ln.input(2);
  if (bias && (!is_f32_constant(bias, ir3) || bias->initializer->numel() != channels))
    return "its bias is not a float32 constant vector of the scale's length";
  if (is_graph_output(g, scale) || (bias && is_graph_output(g, bias))) return "its scale or bias is a graph output";
  if (is_graph_output(g, y)) return "its output is a graph output";
  if (y->uses.empty()) return "its output is not read";
  std::set<const ir::Node*> readers, float_readers;
  site = ScaleSite{};
  site.ln = &ln;
  site.x = ln.outputs[0];
  site.channels = channels;
  for (const ir::Use& u : y->uses) {
    const ir::Node& r = *u.user;
    if (r.owner == &g && (r.is("Shape") || r.is("Size"))) continue;  // the shape is kept
    if (r.owner == &g && !selected.count(&r)) {
      // A float reader keeps the unsmoothed value through a copy of the LayerNormalization.
      if (float_readers.insert(&r).second) site.float_readers.push_back(u.user);
      continue;
    }
    const std::string why = reader_refusal(g, ir3, r, u.input_index, channels, selected);
    if (!why.empty()) return why;
    if (readers.insert(&r).second) site.readers.push_back(u.user);
  }
  if (site.readers.empty()) return "no quantized MatMul/Gemm reads its output";
  return shared_weight_refusal(site);
}

/// The input of Mul `m` holding a float32 constant of `channels` values laid along the last axis
/// ([K], [1, K], [1, 1, K], ...), or -1.
int const_vector_input(const ir::Node& m, bool ir3, int64_t channels) {
  if (!m.is("Mul") || m.inputs.size() != 2) return -1;
  for (int i = 0; i < 2; ++i) {
    const ir::Value* c = m.input(static_cast<size_t>(i));
    const ir::Value* other = m.input(static_cast<size_t>(1 - i));
    if (!is_f32_constant(c, ir3) || !other || other->initializer || c->initializer->numel() != channels) continue;
    const auto& d = c->initializer->dims();
    if (d.empty() || d.back() != channels) continue;
    return i;
  }
  return -1;
}

/// X' = X / s through LayerNormalization gamma and beta or a constant-vector Mul; a shared constant is
/// copied first (its name goes to `copied`).
ir::Tensor& writable_input(ir::Graph& g, ir::Node& n, size_t i, json& copied) {
  ir::Value* v = n.input(i);
  if (v->uses.size() == 1 && v->uses[0].user == &n) {
    v->initializer = v->initializer->clone();
    return *v->initializer;
  }
  ir::Value& fresh = g.add_initializer(g.unique_name(v->name + "_smoothed"), v->initializer->clone());
  copied.push_back(v->name);
  g.set_input(n, i, &fresh);
  return *fresh.initializer;
}

/// Gives the float readers of `s` their own copy of the LayerNormalization (same inputs and
/// attributes, inserted before it, output '<y>_float'); returns the copy's label.
std::string add_float_copy(ir::Graph& g, const ScaleSite& s) {
  ir::Node& ln = *s.ln;
  ir::Value* y = ln.outputs[0];
  ir::Node& copy = g.add_node(ln.op_type, ln.domain, ln.name.empty() ? "" : ln.name + "_float", ln.inputs,
                              {g.unique_name(y->name + "_float")}, &ln);
  copy.attrs = ln.attrs;
  copy.since_version = ln.since_version;
  copy.outputs[0]->dtype = y->dtype;
  copy.outputs[0]->shape = y->shape;
  for (ir::Node* r : s.float_readers)
    for (size_t i = 0; i < r->inputs.size(); ++i)
      if (r->inputs[i] == y) g.set_input(*r, i, copy.outputs[0]);
  return node_label(copy);
}

/// W'[j, :] = s[j] W[j, :] (columns for a transB Gemm) for every reader; a weight read by two
/// readers is scaled once.
void scale_weight_rows(const std::vector<ir::Node*>& readers, const std::vector<float>& scales) {
  std::set<ir::Value*> done;
  for (ir::Node* r : readers) {
    if (!done.insert(r->input(1)).second) continue;
    ir::Tensor t = r->input(1)->initializer->clone();
    auto v = t.mutable_data<float>();
    const size_t rows = static_cast<size_t>(t.dims()[0]), cols = static_cast<size_t>(t.dims()[1]);
    const bool tr = transposed_weight(*r);
    for (size_t i = 0; i < rows; ++i)
      for (size_t k = 0; k < cols; ++k) v[i * cols + k] = v[i * cols + k] * scales[tr ? k : i];
    r->input(1)->initializer = std::move(t);
  }
}

/// Divides input `i` of `n` (a constant of as many values as scales) by the scales; returns `copied`.
json divide_constant(ir::Graph& g, ir::Node& n, size_t i, const std::vector<float>& scales, json copied) {
  auto v = writable_input(g, n, i, copied).mutable_data<float>();
  for (size_t j = 0; j < v.size(); ++j) v[j] = v[j] / scales[j];
  return copied;
}

/// X' = X * (1/s) through a Mul inserted before the first reader (the Mul's output takes X's name,
/// so the quantization point and the per-layer names follow; X itself becomes '<x>_unsmoothed',
/// still read by the float readers). Returns the Mul's name.
std::string insert_mul(ir::Graph& g, const ScaleSite& s, const std::vector<float>& scales) {
  ir::Value* x = s.x;
  const std::string name = x->name;
  const ir::Node* before = nullptr;
  for (const ir::Node* n : g.nodes())
    if (std::find(s.readers.begin(), s.readers.end(), n) != s.readers.end()) {
      before = n;
      break;
    }
  g.rename_value(*x, g.unique_name(name + "_unsmoothed"));
  std::vector<float> inverse(scales.size());
  for (size_t j = 0; j < scales.size(); ++j) inverse[j] = 1.0f / scales[j];
  ir::Value& iv = g.add_initializer(g.unique_name(name + "_smooth_scale"),
                                    ir::Tensor::from_vector<float>({static_cast<int64_t>(inverse.size())}, inverse));
  std::set<std::string> taken;
  for (const ir::Node* n : g.nodes()) taken.insert(n->name);
  std::string node_name = name + "_SmoothQuant_Mul";
  for (int i = 1; taken.count(node_name); ++i) node_name = name + "_SmoothQuant_Mul_" + std::to_string(i);
  ir::Node& mul = g.add_node("Mul", "", node_name, {x, &iv}, {name}, before);
  mul.outputs[0]->dtype = x->dtype;
  mul.outputs[0]->shape = x->shape;
  for (ir::Node* r : s.readers)
    for (size_t i = 0; i < r->inputs.size(); ++i)
      if (r->inputs[i] == x) g.set_input(*r, i, mul.outputs[0]);
  return node_label(mul);
}

/// The readers named in a recorded layer, each checked to be a MatMul/Gemm reading `x` with a float32
/// weight of `channels` input channels.
std::vector<ir::Node*> recorded_readers(const json& l, const ir::Value* x, int64_t channels, bool ir3,
                                        const std::map<std::string, ir::Node*>& by_label,
                                        const std::function<ModelError(const std::string&)>& unfit) {
  std::vector<ir::Node*> readers;
  for (const auto& rn : l.at("readers")) {
    const std::string reader = rn.get<std::string>();
    const auto r = by_label.find(reader);
    if (r == by_label.end()) throw unfit("no node '" + reader + "'");
    const ir::Node& n = *r->second;
    const ir::Value* w = n.input(1);
    const bool ok = (n.op_type == "MatMul" || n.op_type == "Gemm") && n.input(0) == x && is_f32_constant(w, ir3) &&
                    w->initializer->rank() == 2 && w->initializer->dims()[transposed_weight(n) ? 1 : 0] == channels;
    if (!ok) throw unfit("'" + reader + "' is not a MatMul/Gemm reading it with a float32 weight of " +
                         std::to_string(channels) + " input channels");
    readers.push_back(r->second);
  }
  if (readers.empty()) throw unfit("no readers recorded");
  return readers;
}

}  // namespace

std::vector<ScaleSite> find_layer_norm_sites(ir::Model& model, const Selection& sel, json& skipped) {
  const ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version < 4;
  const auto selected = selected_nodes(sel);
  std::vector<ScaleSite> sites;
  for (ir::Node* n : g.nodes()) {
    if (!n->is("LayerNormalization")) continue;
    ScaleSite site;
    const std::string why = layer_norm_refusal(g, ir3, *n, selected, site);
    if (why.empty()) sites.push_back(std::move(site));
    else skipped.push_back({{"layer_norm", node_label(*n)}, {"reason", why}});
  }
  return sites;
}

std::vector<ScaleSite> find_activation_sites(ir::Model& model, const Selection& sel, json& skipped, bool fold_const_mul) {
  ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version < 4;
  const auto selected = selected_nodes(sel);
  std::vector<ScaleSite> sites;
  std::set<const ir::Value*> seen;
  for (const auto& c : sel.nodes) {
    const ir::Node& n = *c.node;
    ir::Value* x = n.inputs.empty() ? nullptr : n.inputs[0];
    if ((n.op_type != "MatMul" && n.op_type != "Gemm") || !x || x->initializer || !seen.insert(x).second) continue;
    if (x->producer && x->producer->is("LayerNormalization")) continue;  // a LayerNormalization site (or its reason)
    auto skip = [&](const std::string& why) { skipped.push_back({{"activation", x->name}, {"reason", why}}); };
    if (!x->producer) {
      skip("a graph input");
      continue;
    }
    if (is_graph_output(g, x)) {
      skip("a graph output");
      continue;
    }
    const ir::Value* w0 = n.input(1);
    if (!is_f32_constant(w0, ir3) || w0->initializer->rank() != 2) {
      skip("read by '" + node_label(n) + "', whose weight is not a float32 constant matrix");
      continue;
    }
    ScaleSite site;
    site.x = x;
    site.channels = w0->initializer->dims()[transposed_weight(n) ? 1 : 0];
    std::string why;
    std::set<const ir::Node*> readers;
    for (const ir::Use& u : x->uses) {
      const ir::Node& r = *u.user;
      if (r.owner == &g && !selected.count(&r)) {
        if (std::find(site.float_readers.begin(), site.float_readers.end(), u.user) == site.float_readers.end())
          site.float_readers.push_back(u.user);  // keeps reading the unsmoothed value
        continue;
      }
      why = reader_refusal(g, ir3, r, u.input_index, site.channels, selected);
      if (!why.empty()) break;
      if (readers.insert(&r).second) site.readers.push_back(u.user);
    }
    if (why.empty()) why = shared_weight_refusal(site);
    if (!why.empty()) {
      skip(why);
      continue;
    }
    const bool only_shape_readers =
        std::all_of(site.float_readers.begin(), site.float_readers.end(), [&](const ir::Node* r) {
          return r->owner == &g && (r->is("Shape") || r->is("Size"));
        });
    const int ci = const_vector_input(*x->producer, ir3, site.channels);
    if (fold_const_mul && only_shape_readers && ci >= 0) {
      site.const_mul = x->producer;
      site.const_index = ci;
      site.float_readers.clear();  // Shape/Size keep reading the rescaled value: its shape is the same
    }
    sites.push_back(std::move(site));
  }
  return sites;
}

void skip_site(json& skipped, const ScaleSite& s, const std::string& why) {
  if (s.ln) skipped.push_back({{"layer_norm", node_label(*s.ln)}, {"reason", why}});
  else skipped.push_back({{"activation", s.x->name}, {"reason", why}});
}

json site_record(const ScaleSite& s) {
  json l;
  if (s.ln) l["layer_norm"] = node_label(*s.ln);
  else l["activation"] = s.x->name;
  return l;
}

json node_labels(const std::vector<ir::Node*>& nodes) {
  json a = json::array();
  for (const ir::Node* n : nodes) a.push_back(node_label(*n));
  return a;
}

void apply_scale_site(ir::Graph& g, const ScaleSite& s, const std::vector<float>& scales, json& layer) {
  if (s.ln) {
    if (!s.float_readers.empty()) layer["float_copy"] = add_float_copy(g, s);
    json copied = json::array();
    for (size_t i : {size_t{1}, size_t{2}})
      if (s.ln->input(i)) copied = divide_constant(g, *s.ln, i, scales, copied);
    layer["copied"] = copied;
  } else if (s.const_mul) {
    layer["scaled_mul"] = node_label(*s.const_mul);
    layer["copied"] = divide_constant(g, *s.const_mul, static_cast<size_t>(s.const_index), scales, json::array());
  } else {
    layer["mul"] = insert_mul(g, s, scales);
  }
  scale_weight_rows(s.readers, scales);
}

ReplayedSites replay_scale_sites(ir::Model& model, const json& rec, const std::string& what) {
  ReplayedSites out;
  ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version < 4;
  std::map<std::string, ir::Node*> by_label;
  for (ir::Node* n : g.nodes()) by_label.emplace(node_label(*n), n);
  try {
    for (const auto& l : rec.at("layers")) {
      const bool is_ln = l.contains("layer_norm");
      const std::string name = l.at(is_ln ? "layer_norm" : "activation").get<std::string>();
      auto unfit = [&](const std::string& why) {
        return ModelError("quantize: the state's " + what + (is_ln ? " layer '" : " activation '") + name +
                          "' does not fit this model: " + why);
      };
      ScaleSite s;
      const std::vector<float> scales = l.at("scales").get<std::vector<float>>();
      s.channels = static_cast<int64_t>(scales.size());
      for (float f : scales)
        if (!(f > 0) || !std::isfinite(f)) throw unfit("a scale is not a positive float32 value");
      if (is_ln) {
        const auto it = by_label.find(name);
        if (it == by_label.end() || !it->second->is("LayerNormalization")) throw unfit("no LayerNormalization of that name");
        s.ln = it->second;
        s.x = s.ln->outputs[0];
        const ir::Value* gamma = s.ln->input(1);
        if (!is_f32_constant(gamma, ir3) || gamma->initializer->numel() != s.channels)
          throw unfit("its scale is not a float32 constant of " + std::to_string(s.channels) + " channels");
        const ir::Value* beta = s.ln->input(2);
        if (beta && (!is_f32_constant(beta, ir3) || beta->initializer->numel() != s.channels))
          throw unfit("its bias is not a float32 constant of " + std::to_string(s.channels) + " channels");
        for (const auto& rn : l.value("float_readers", json::array())) {
          const std::string reader = rn.get<std::string>();
          const auto r = by_label.find(reader);
          if (r == by_label.end() || std::find(r->second->inputs.begin(), r->second->inputs.end(), s.x) == r->second->inputs.end())
            throw unfit("'" + reader + "' does not read its output");
          s.float_readers.push_back(r->second);
        }
      } else {
        s.x = g.find_value(name);
        if (!s.x || !s.x->producer || s.x->initializer) throw unfit("no value of that name produced by a node");
        if (l.contains("scaled_mul")) {
          s.const_index = const_vector_input(*s.x->producer, ir3, s.channels);
          if (node_label(*s.x->producer) != l.at("scaled_mul").get<std::string>() || s.const_index < 0)
            throw unfit("it is not the output of a Mul by a float32 constant of " + std::to_string(s.channels) + " values");
          s.const_mul = s.x->producer;
        }
      }
      s.readers = recorded_readers(l, s.x, s.channels, ir3, by_label, unfit);
      json ignored;
      apply_scale_site(g, s, scales, ignored);
      out.readers += static_cast<int64_t>(s.readers.size());
      if (s.ln) {
        ++out.layers;
        if (!s.float_readers.empty()) ++out.float_copies;
      } else if (s.const_mul) {
        ++out.scaled_muls;
      } else {
        ++out.muls;
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw ModelError("quantize: the state's " + what + " record is invalid: " + e.what());
  }
  return out;
}

}  // namespace mcc::transforms::quantize
