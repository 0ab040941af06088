// SmoothQuant for the quantize stage: eligible LayerNormalizations, their outputs' per-channel
// maxima, the scales and their folding into gamma/beta and the readers' weights (see
// quantize/smooth.h).
#include "transforms/quantize/smooth.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/points.h"


namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

constexpr double kMinScale = 1e-5, kMaxScale = 1e5;

/// One LayerNormalization to smooth, or (ln null) one activation `x` to smooth through an
/// inserted Mul, and the MatMul/Gemm nodes that read it.
struct Site {
  ir::Node* ln = nullptr;
  ir::Value* x = nullptr;                // the smoothed value (ln's output for a LayerNormalization)
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

/// Why the readers of site `s` cannot take its scales through their weights ("" = they can): a
/// weight also read by a node outside the site, or read both as [K, N] and [N, K].
std::string shared_weight_refusal(const Site& s) {
  const std::set<const ir::Node*> readers(s.readers.begin(), s.readers.end());
  for (const ir::Node* r : s.readers) {
    const ir::Value* w = r->input(1);
    for (const ir::Use& u : w->uses) {
      if (!readers.count(u.user))
        return "the weight '" + w->name + "' of '" + node_label(*r) + "' is also read by '" + node_label(*u.user) + "'";
      if (transposed(*u.user) != transposed(*r)) return "the weight '" + w->name + "' is read both as [K, N] and as [N, K]";
    }
  }
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
  site = Site{&ln, ln.outputs[0], {}, {}, channels};
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


/// The quantized MatMul/Gemm inputs that no LayerNormalization produces (smooth_quant_insert):
/// each becomes a site smoothed through an inserted Mul; what cannot be is listed in `skipped`.
std::vector<Site> find_mul_sites(ir::Model& model, const Selection& sel, json& skipped) {
  ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version < 4;
  std::map<const ir::Node*, const Candidate*> selected;
  for (const auto& c : sel.nodes) selected[c.node] = &c;
  std::vector<Site> sites;
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
    Site site;
    site.x = x;
    site.channels = w0->initializer->dims()[transposed(n) ? 1 : 0];
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
    if (why.empty()) sites.push_back(std::move(site));
    else skip(why);
  }
  return sites;
}

/// Lists site `s` as left alone with `why`, under its LayerNormalization or its activation.
void skip_site(json& skipped, const Site& s, const std::string& why) {
  if (s.ln) skipped.push_back({{"layer_norm", node_label(*s.ln)}, {"reason", why}});
  else skipped.push_back({{"activation", s.x->name}, {"reason", why}});
}

/// Calls f(index, j, n, w) for every element of every distinct reader weight of `s`: index counts
/// the distinct weights from 0, j is the element's input channel and n its output column (a
/// transB Gemm's weight is [N, K]).
template <class F>
void for_each_weight(const Site& s, F&& f) {
  std::set<const ir::Value*> seen;
  for (const ir::Node* r : s.readers) {
    if (!seen.insert(r->input(1)).second) continue;
    const ir::Tensor& w = *r->input(1)->initializer;
    const auto v = w.data<float>();
    const size_t rows = static_cast<size_t>(w.dims()[0]), cols = static_cast<size_t>(w.dims()[1]);
    const bool t = transposed(*r);
    for (size_t i = 0; i < rows; ++i)
      for (size_t k = 0; k < cols; ++k) f(seen.size() - 1, t ? k : i, t ? i : k, v[i * cols + k]);
  }
}

/// max |W[j, :]| over every reader's weight, per input channel j.
std::vector<double> weight_row_max(const Site& s) {
  std::vector<double> m(static_cast<size_t>(s.channels), 0.0);
  for_each_weight(s, [&](size_t, size_t j, size_t, float w) {
    const double a = std::fabs(static_cast<double>(w));
    if (std::isfinite(a)) m[j] = std::max(m[j], a);
    else m[j] = INFINITY;  // guarded below: s = 1
  });
  return m;
}

/// Per-channel running max |x| of the tapped tensors (last axis); non-finite values mark the channel.
struct ChannelMax {
  std::vector<double> max;
  std::vector<bool> nonfinite;
  std::vector<double> sumsq;  // per channel, over every row seen (for the noise estimate)
  int64_t rows = 0;
  bool mismatch = false;  // a tensor whose last axis is not `channels`
  void add(const ir::Tensor& t) {
    if (t.dtype() != ir::DType::F32 || t.rank() < 1 || t.dims().back() != static_cast<int64_t>(max.size())) {
      mismatch = true;
      return;
    }
    const auto x = t.data<float>();
    const size_t c = max.size();
    if (sumsq.size() != c) sumsq.assign(c, 0.0);
    for (size_t i = 0; i < x.size(); ++i) {
      const float a = std::fabs(x[i]);
      if (!std::isfinite(a)) {
        nonfinite[i % c] = true;
        continue;
      }
      if (a > max[i % c]) max[i % c] = a;
      sumsq[i % c] += static_cast<double>(a) * a;
    }
    rows += c ? static_cast<int64_t>(x.size() / c) : 0;
  }
};

/// Estimated int8 output noise power of a site's readers with input scales `s` (all 1: not
/// smoothed): the per-tensor uint8 activation step over [-A, A], A = max_j max|x_j| / s_j, spread
/// through every weight row s_j W_j, plus each output column's int8 weight step max_j |s_j W_jn| /
/// 127 spread through E[(x_j / s_j)^2]. Uniform rounding noise (step^2 / 12) throughout.
double int8_noise(const Site& site, const ChannelMax& m, const std::vector<float>& s) {
  const size_t K = s.size();
  double A = 0, input_power = 0;
  for (size_t j = 0; j < K; ++j) {
    A = std::max(A, m.max[j] / s[j]);
    if (m.rows > 0) input_power += m.sumsq[j] / static_cast<double>(m.rows) / (static_cast<double>(s[j]) * s[j]);
  }
  const double act_step = 2 * A / 255;
  std::vector<std::vector<double>> col_max;  // per distinct weight, per output column: max |s_j W_jn|
  double scaled_power = 0;                   // sum over weights, j, n of (s_j W_jn)^2
  for_each_weight(site, [&](size_t index, size_t j, size_t n, float w) {
    if (col_max.size() <= index) col_max.resize(index + 1);
    if (col_max[index].size() <= n) col_max[index].resize(n + 1, 0.0);
    const double a = std::fabs(static_cast<double>(w) * s[j]);
    if (!std::isfinite(a)) return;
    col_max[index][n] = std::max(col_max[index][n], a);
    scaled_power += a * a;
  });
  double weight_steps = 0;
  for (const auto& cols : col_max)
    for (double c : cols) weight_steps += (c / 127) * (c / 127);
  return act_step * act_step / 12 * scaled_power + weight_steps / 12 * input_power;
}

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

/// W'[j, :] = s[j] W[j, :] (columns for a transB Gemm) for every reader; a weight read by two
/// readers is scaled once.
void scale_weight_rows(const std::vector<ir::Node*>& readers, const std::vector<float>& scales) {
  std::set<ir::Value*> done;
  for (ir::Node* r : readers) {
    if (!done.insert(r->input(1)).second) continue;
    ir::Tensor t = r->input(1)->initializer->clone();
    auto v = t.mutable_data<float>();
    const size_t rows = static_cast<size_t>(t.dims()[0]), cols = static_cast<size_t>(t.dims()[1]);
    const bool tr = transposed(*r);
    for (size_t i = 0; i < rows; ++i)
      for (size_t k = 0; k < cols; ++k) v[i * cols + k] = v[i * cols + k] * scales[tr ? k : i];
    r->input(1)->initializer = std::move(t);
  }
}

/// X' = X / s through gamma and beta, W'[j, :] = s[j] W[j, :] for every reader.
json apply_scales(ir::Graph& g, const Site& s, const std::vector<float>& scales) {
  json copied = json::array();
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!s.ln->input(i)) continue;
    auto v = writable_input(g, *s.ln, i, copied).mutable_data<float>();
    for (size_t j = 0; j < v.size(); ++j) v[j] = v[j] / scales[j];
  }
  scale_weight_rows(s.readers, scales);
  return copied;
}

/// X' = X * (1/s) through a Mul inserted before the first reader (the Mul's output takes X's name,
/// so the quantization point and the per-layer names follow; X itself becomes '<x>_unsmoothed',
/// still read by the float readers), W'[j, :] = s[j] W[j, :] for every reader. Returns the Mul's name.
std::string apply_mul_site(ir::Graph& g, const Site& s, const std::vector<float>& scales) {
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
  scale_weight_rows(s.readers, scales);
  return node_label(mul);
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
  if (cfg.smooth_insert) {
    std::vector<Site> more = find_mul_sites(model, sel, skipped);
    sites.insert(sites.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }

  std::map<std::string, ChannelMax> maxima;  // by smoothed value name
  if (!sites.empty()) {
    CalibrationConfig cc = calibration_config(cfg, ctx, "smooth_quant needs calibration data");
    for (const Site& s : sites) {
      const std::string& y = s.x->name;
      cc.tap_watch.push_back(y);
      maxima[y] = ChannelMax{std::vector<double>(static_cast<size_t>(s.channels), 0.0),
                             std::vector<bool>(static_cast<size_t>(s.channels), false),
                             std::vector<double>(static_cast<size_t>(s.channels), 0.0), 0, false};
    }
    cc.tap = [&](const std::string& name, const ir::Tensor& t) {
      if (const auto it = maxima.find(name); it != maxima.end()) it->second.add(t);
    };
    const CalibrationResult r = calibrate(model, {}, cc);
    spdlog::info("quantize: smooth_quant: per-channel maxima of {} MatMul/Gemm inputs over {} samples", sites.size(), r.samples);
  }

  json layers = json::array();
  for (const Site& s : sites) {
    const ChannelMax& m = maxima.at(s.x->name);
    if (m.mismatch) {
      const std::string why = "its last axis was not " + std::to_string(s.channels) + " float32 channels";
      skip_site(skipped, s, why);
      continue;
    }
    const std::vector<double> wmax = weight_row_max(s);
    auto scales_for = [&](double alpha) {
      std::vector<float> sc(static_cast<size_t>(s.channels));
      for (size_t j = 0; j < sc.size(); ++j) sc[j] = m.nonfinite[j] ? 1.0f : smoothing_scale(m.max[j], wmax[j], alpha);
      return sc;
    };
    // alpha_search: per site, the strength among ALPHA and 0.3, 0.4, ..., 0.9 with the least
    // estimated int8 output noise (the first of equals).
    double alpha = cfg.smooth_alpha;
    std::vector<float> scales = scales_for(alpha);
    double noise_smoothed = int8_noise(s, m, scales);
    if (cfg.smooth_alpha_search)
      for (int k = 3; k <= 9; ++k) {
        const std::vector<float> sc = scales_for(k / 10.0);
        if (const double n = int8_noise(s, m, sc); n < noise_smoothed) {
          alpha = k / 10.0;
          scales = sc;
          noise_smoothed = n;
        }
      }
    double before = 0, after = 0;
    for (size_t j = 0; j < scales.size(); ++j) {
      before = std::max(before, m.max[j]);
      after = std::max(after, m.max[j] / scales[j]);
    }
    // Smoothed only where it lowers the estimated int8 output noise of the readers.
    const double noise_plain = int8_noise(s, m, std::vector<float>(scales.size(), 1.0f));
    if (!(noise_smoothed < noise_plain)) {
      const std::string why = "smoothing would not lower the estimated int8 output noise (" + std::to_string(noise_smoothed) +
                              " vs " + std::to_string(noise_plain) + ")";
      skip_site(skipped, s, why);
      continue;
    }
    json layer;
    if (s.ln) layer["layer_norm"] = node_label(*s.ln);
    else layer["activation"] = s.x->name;
    if (cfg.smooth_alpha_search) layer["alpha"] = alpha;
    layer["readers"] = names_of(s.readers);
    layer["float_readers"] = names_of(s.float_readers);
    layer["activation_max"] = static_cast<double>(static_cast<float>(before));
    layer["smoothed_max"] = static_cast<double>(static_cast<float>(after));
    json sj = json::array();
    for (float f : scales) sj.push_back(static_cast<double>(f));
    layer["scales"] = sj;
    if (!s.ln) {
      layer["mul"] = apply_mul_site(*model.graph, s, scales);
      layers.push_back(layer);
      ++out.muls;
      out.readers += static_cast<int64_t>(s.readers.size());
      continue;
    }
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
  spdlog::info("quantize: smooth_quant={}: {} LayerNormalizations and {} inserted Muls smoothed into {} MatMul/Gemm "
               "weights, {} left as they are", cfg.smooth_alpha, out.layers, out.muls, out.readers, skipped.size());
  return out;
}

namespace {

/// Replays one recorded inserted-Mul site; ModelError when it does not fit the model.
void replay_mul_site(ir::Graph& g, bool ir3, const std::map<std::string, ir::Node*>& by_label, const json& l) {
  const std::string name = l.at("activation").get<std::string>();
  auto unfit = [&](const std::string& why) {
    return ModelError("quantize: the state's smooth_quant activation '" + name + "' does not fit this model: " + why);
  };
  Site s;
  s.x = g.find_value(name);
  if (!s.x || !s.x->producer || s.x->initializer) throw unfit("no value of that name produced by a node");
  const std::vector<float> scales = l.at("scales").get<std::vector<float>>();
  s.channels = static_cast<int64_t>(scales.size());
  for (float f : scales)
    if (!(f > 0) || !std::isfinite(f)) throw unfit("a scale is not a positive float32 value");
  for (const auto& rn : l.at("readers")) {
    const std::string reader = rn.get<std::string>();
    const auto r = by_label.find(reader);
    if (r == by_label.end()) throw unfit("no node '" + reader + "'");
    const ir::Node& n = *r->second;
    const ir::Value* w = n.input(1);
    const bool ok = (n.op_type == "MatMul" || n.op_type == "Gemm") && n.input(0) == s.x && is_f32_constant(w, ir3) &&
                    w->initializer->rank() == 2 && w->initializer->dims()[transposed(n) ? 1 : 0] == s.channels;
    if (!ok) throw unfit("'" + reader + "' is not a MatMul/Gemm reading it with a float32 weight of " +
                         std::to_string(s.channels) + " input channels");
    s.readers.push_back(r->second);
  }
  if (s.readers.empty()) throw unfit("no readers recorded");
  apply_mul_site(g, s, scales);
}

}  // namespace

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
      if (l.contains("activation")) {
        replay_mul_site(g, ir3, by_label, l);
        ++out.muls;
        out.readers += static_cast<int64_t>(l.at("readers").size());
        continue;
      }
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
  if (s.muls) stats["smooth_quant_muls"] = s.muls;
  stats["smooth_quant_readers"] = s.readers;
  stats["smooth_quant_float_copies"] = s.float_copies;
}

}  // namespace mcc::transforms::quantize
