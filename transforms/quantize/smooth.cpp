// SmoothQuant for the quantize stage: eligible LayerNormalizations, their outputs' per-channel
// maxima, the scales and their folding into gamma/beta and the readers' weights (see
// quantize/smooth.h).
#include "transforms/quantize/smooth.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/points.h"

namespace fs = std::filesystem;

namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

constexpr double kMinScale = 1e-5, kMaxScale = 1e5;

/// One LayerNormalization to smooth and the MatMul/Gemm nodes that read its output.
struct Site {
  ir::Node* ln = nullptr;
  std::vector<ir::Node*> readers;        // quantized MatMul/Gemm: their weights take the scales
  std::vector<ir::Node*> float_readers;  // other nodes (a residual Add): they get a float copy
  int64_t channels = 0;
};

bool is_f32_constant(const ir::Value* v, bool ir3) {
  return v && v->initializer && v->initializer->dtype() == ir::DType::F32 && (ir3 || !v->is_graph_input);
}

/// Whether a reader's weight is stored [N, K] (Gemm with transB): channel j is column j.
bool transposed(const ir::Node& reader) { return reader.op_type == "Gemm" && reader.attr_int("transB", 0) != 0; }

/// Why `reader` cannot take the scales of a LayerNormalization output with `channels` channels
/// read at its input `index` ("" = it can).
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
  const int64_t k = transposed(reader) ? d[1] : d[0];
  if (k != channels)
    return "read by " + who + ", whose weight has " + std::to_string(k) + " input channels for " + std::to_string(channels);
  if (is_graph_output(g, w)) return "the weight '" + w->name + "' of " + who + " is a graph output";
  return "";
}

/// Why `ln` cannot be smoothed ("" = it can); fills `site` when it can.
std::string site_refusal(const ir::Graph& g, bool ir3, ir::Node& ln, const std::map<const ir::Node*, const Candidate*>& selected,
                         Site& site) {
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
  site = Site{&ln, {}, {}, channels};
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
  for (const ir::Node* r : site.readers) {
    const ir::Value* w = r->input(1);
    for (const ir::Use& u : w->uses) {
      if (!readers.count(u.user))
        return "the weight '" + w->name + "' of '" + node_label(*r) + "' is also read by '" + node_label(*u.user) + "'";
      if (transposed(*u.user) != transposed(*r)) return "the weight '" + w->name + "' is read both as [K, N] and as [N, K]";
    }
  }
  return "";
}

std::vector<Site> find_sites(ir::Model& model, const Selection& sel, json& skipped) {
  const ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version < 4;
  std::map<const ir::Node*, const Candidate*> selected;
  for (const auto& c : sel.nodes) selected[c.node] = &c;
  std::vector<Site> sites;
  for (ir::Node* n : g.nodes()) {
    if (!n->is("LayerNormalization")) continue;
    Site site;
    const std::string why = site_refusal(g, ir3, *n, selected, site);
    if (why.empty()) sites.push_back(std::move(site));
    else skipped.push_back({{"layer_norm", node_label(*n)}, {"reason", why}});
  }
  return sites;
}

/// max |W[j, :]| over every reader's weight, per input channel j.
std::vector<double> weight_row_max(const Site& s) {
  std::vector<double> m(static_cast<size_t>(s.channels), 0.0);
  std::set<const ir::Value*> seen;
  for (const ir::Node* r : s.readers) {
    if (!seen.insert(r->input(1)).second) continue;
    const ir::Tensor& w = *r->input(1)->initializer;
    const auto v = w.data<float>();
    const size_t rows = static_cast<size_t>(w.dims()[0]), cols = static_cast<size_t>(w.dims()[1]);
    const bool t = transposed(*r);
    for (size_t i = 0; i < rows; ++i)
      for (size_t k = 0; k < cols; ++k) {
        const double a = std::fabs(static_cast<double>(v[i * cols + k]));
        double& slot = m[t ? k : i];
        if (std::isfinite(a)) slot = std::max(slot, a);
        else slot = INFINITY;  // guarded below: s = 1
      }
  }
  return m;
}

/// Per-channel running max |x| of the tapped tensors (last axis); non-finite values mark the channel.
struct ChannelMax {
  std::vector<double> max;
  std::vector<bool> nonfinite;
  bool mismatch = false;  // a tensor whose last axis is not `channels`
  void add(const ir::Tensor& t) {
    if (t.dtype() != ir::DType::F32 || t.rank() < 1 || t.dims().back() != static_cast<int64_t>(max.size())) {
      mismatch = true;
      return;
    }
    const auto x = t.data<float>();
    const size_t c = max.size();
    for (size_t i = 0; i < x.size(); ++i) {
      const float a = std::fabs(x[i]);
      if (!std::isfinite(a)) nonfinite[i % c] = true;
      else if (a > max[i % c]) max[i % c] = a;
    }
  }
};

float smoothing_scale(double act, double wt, double alpha) {
  if (!(act > 0) || !(wt > 0) || !std::isfinite(act) || !std::isfinite(wt)) return 1.0f;
  const double s = std::pow(act, alpha) / std::pow(wt, 1.0 - alpha);
  if (!std::isfinite(s)) return 1.0f;
  return static_cast<float>(std::clamp(s, kMinScale, kMaxScale));
}

/// A writable copy of input `i` of `n`: in place when `n` is its only reader, else a new
/// initializer (copy-on-write) whose name goes to `copied`.
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
std::string add_float_copy(ir::Graph& g, const Site& s) {
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

/// X' = X / s through gamma and beta, W'[j, :] = s[j] W[j, :] for every reader.
json apply_scales(ir::Graph& g, const Site& s, const std::vector<float>& scales) {
  json copied = json::array();
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!s.ln->input(i)) continue;
    auto v = writable_input(g, *s.ln, i, copied).mutable_data<float>();
    for (size_t j = 0; j < v.size(); ++j) v[j] = v[j] / scales[j];
  }
  std::set<ir::Value*> done;  // a weight read by two readers is scaled once
  for (ir::Node* r : s.readers) {
    if (!done.insert(r->input(1)).second) continue;
    ir::Tensor t = r->input(1)->initializer->clone();
    auto v = t.mutable_data<float>();
    const size_t rows = static_cast<size_t>(t.dims()[0]), cols = static_cast<size_t>(t.dims()[1]);
    const bool tr = transposed(*r);
    for (size_t i = 0; i < rows; ++i)
      for (size_t k = 0; k < cols; ++k) v[i * cols + k] = v[i * cols + k] * scales[tr ? k : i];
    r->input(1)->initializer = std::move(t);
  }
  return copied;
}

std::string resolve_dir(const Config& cfg, const PassContext& ctx) {
  std::string dir = cfg.calib;
  if (dir.empty()) throw UsageError("quantize: smooth_quant needs calibration data; set calib=DIR (mcc quantize --calib DIR)");
  if (fs::path(dir).is_relative() && !ctx.base_dir.empty()) dir = (fs::path(ctx.base_dir) / dir).lexically_normal().string();
  return dir;
}

json names_of(const std::vector<ir::Node*>& nodes) {
  json a = json::array();
  for (const ir::Node* n : nodes) a.push_back(node_label(*n));
  return a;
}

}  // namespace

Smoothed smooth_quant(ir::Model& model, const Selection& sel, const Config& cfg, const PassContext& ctx) {
  Smoothed out;
  if (cfg.smooth_alpha <= 0) return out;
  out.enabled = true;
  json skipped = json::array();
  std::vector<Site> sites = find_sites(model, sel, skipped);

  std::map<std::string, ChannelMax> maxima;  // by LayerNormalization output name
  if (!sites.empty()) {
    CalibrationConfig cc;
    cc.data_dir = resolve_dir(cfg, ctx);
    cc.max_samples = static_cast<size_t>(cfg.samples);
    cc.holdout = static_cast<size_t>(cfg.holdout);
    cc.histograms = false;
    cc.threads = ctx.threads;
    for (const Site& s : sites) {
      const std::string& y = s.ln->outputs[0]->name;
      cc.tap_watch.push_back(y);
      maxima[y] = ChannelMax{std::vector<double>(static_cast<size_t>(s.channels), 0.0),
                             std::vector<bool>(static_cast<size_t>(s.channels), false)};
    }
    cc.tap = [&](const std::string& name, const ir::Tensor& t) {
      if (const auto it = maxima.find(name); it != maxima.end()) it->second.add(t);
    };
    const CalibrationResult r = calibrate(model, {}, cc);
    spdlog::info("quantize: smooth_quant: per-channel maxima of {} LayerNormalization outputs over {} samples", sites.size(),
                 r.samples);
  }

  json layers = json::array();
  for (const Site& s : sites) {
    const ChannelMax& m = maxima.at(s.ln->outputs[0]->name);
    if (m.mismatch) {
      skipped.push_back({{"layer_norm", node_label(*s.ln)},
                         {"reason", "its output's last axis was not " + std::to_string(s.channels) + " float32 channels"}});
      continue;
    }
    const std::vector<double> wmax = weight_row_max(s);
    std::vector<float> scales(static_cast<size_t>(s.channels));
    double before = 0, after = 0;
    for (size_t j = 0; j < scales.size(); ++j) {
      scales[j] = m.nonfinite[j] ? 1.0f : smoothing_scale(m.max[j], wmax[j], cfg.smooth_alpha);
      before = std::max(before, m.max[j]);
      after = std::max(after, m.max[j] / scales[j]);
    }
    json layer;
    layer["layer_norm"] = node_label(*s.ln);
    layer["readers"] = names_of(s.readers);
    layer["float_readers"] = names_of(s.float_readers);
    layer["activation_max"] = static_cast<double>(static_cast<float>(before));
    layer["smoothed_max"] = static_cast<double>(static_cast<float>(after));
    json sj = json::array();
    for (float f : scales) sj.push_back(static_cast<double>(f));
    layer["scales"] = sj;
    if (!s.float_readers.empty()) {
      layer["float_copy"] = add_float_copy(*model.graph, s);
      ++out.float_copies;
    }
    layer["copied"] = apply_scales(*model.graph, s, scales);
    layers.push_back(layer);
    ++out.layers;
    out.readers += static_cast<int64_t>(s.readers.size());
  }
  out.record["alpha"] = cfg.smooth_alpha;
  out.record["layers"] = layers;
  out.record["skipped"] = skipped;
  spdlog::info("quantize: smooth_quant={}: {} LayerNormalizations smoothed into {} MatMul/Gemm weights, {} left as they are",
               cfg.smooth_alpha, out.layers, out.readers, skipped.size());
  return out;
}

Smoothed apply_smooth_record(ir::Model& model, const json& rec) {
  Smoothed out;
  out.enabled = true;
  out.record = rec;
  ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version < 4;
  std::map<std::string, ir::Node*> by_label;
  for (ir::Node* n : g.nodes()) by_label.emplace(node_label(*n), n);
  try {
    for (const auto& l : rec.at("layers")) {
      const std::string name = l.at("layer_norm").get<std::string>();
      auto unfit = [&](const std::string& why) {
        return ModelError("quantize: the state's smooth_quant layer '" + name + "' does not fit this model: " + why);
      };
      const auto it = by_label.find(name);
      if (it == by_label.end() || !it->second->is("LayerNormalization")) throw unfit("no LayerNormalization of that name");
      Site s;
      s.ln = it->second;
      const std::vector<float> scales = l.at("scales").get<std::vector<float>>();
      s.channels = static_cast<int64_t>(scales.size());
      const ir::Value* gamma = s.ln->input(1);
      if (!is_f32_constant(gamma, ir3) || gamma->initializer->numel() != s.channels)
        throw unfit("its scale is not a float32 constant of " + std::to_string(s.channels) + " channels");
      const ir::Value* beta = s.ln->input(2);
      if (beta && (!is_f32_constant(beta, ir3) || beta->initializer->numel() != s.channels))
        throw unfit("its bias is not a float32 constant of " + std::to_string(s.channels) + " channels");
      for (const auto& rn : l.at("readers")) {
        const std::string reader = rn.get<std::string>();
        const auto r = by_label.find(reader);
        if (r == by_label.end()) throw unfit("no node '" + reader + "'");
        const ir::Node& n = *r->second;
        const ir::Value* w = n.input(1);
        const bool ok = (n.op_type == "MatMul" || n.op_type == "Gemm") && n.input(0) == s.ln->outputs[0] &&
                        is_f32_constant(w, ir3) && w->initializer->rank() == 2 &&
                        w->initializer->dims()[transposed(n) ? 1 : 0] == s.channels;
        if (!ok) throw unfit("'" + reader + "' is not a MatMul/Gemm reading it with a float32 weight of " +
                             std::to_string(s.channels) + " input channels");
        s.readers.push_back(r->second);
      }
      for (const auto& rn : l.value("float_readers", json::array())) {
        const std::string reader = rn.get<std::string>();
        const auto r = by_label.find(reader);
        if (r == by_label.end() || std::find(r->second->inputs.begin(), r->second->inputs.end(), s.ln->outputs[0]) ==
                                       r->second->inputs.end())
          throw unfit("'" + reader + "' does not read its output");
        s.float_readers.push_back(r->second);
      }
      if (!s.float_readers.empty()) {
        add_float_copy(g, s);
        ++out.float_copies;
      }
      apply_scales(g, s, scales);
      ++out.layers;
      out.readers += static_cast<int64_t>(s.readers.size());
    }
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(std::string("quantize: the state's smooth_quant record is invalid: ") + e.what());
  }
  return out;
}

void add_smooth_stats(json& stats, const Smoothed& s) {
  if (!s.enabled) return;
  stats["smooth_quant_layers"] = s.layers;
  stats["smooth_quant_readers"] = s.readers;
  stats["smooth_quant_float_copies"] = s.float_copies;
}

}  // namespace mcc::transforms::quantize
