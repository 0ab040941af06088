// GPTQ codes for static int8 weights (see quantize/static_gptq.h).
#include "transforms/quantize/static_gptq.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "backends/cpu/kernels/conv_util.h"
#include "ir/op_attrs.h"
#include "ir/printer.h"
#include "ir/weight_layout.h"
#include "transforms/quantize/block_quant.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/calibration_cache.h"
#include "transforms/quantize/gptq.h"
#include "transforms/quantize/weight_only.h"

namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

/// Least calibration rows (tokens, patches) per input feature for GPTQ to use a layer's Hessian:
/// with fewer, H is a poor estimate of the inputs' covariance (rank below K when rows < K) and
/// the codes fit the calibration samples rather than the data (EfficientNet-Lite0's classifier:
/// 16 rows for 1280 inputs).
constexpr int64_t kRowsPerInput = 4;

/// One layer whose weight codes GPTQ chooses.
struct Layer {
  const ir::Node* node = nullptr;
  size_t point = 0;          // index of its weight point in Points::points
  bool conv = false;         // Conv: weight [M, C/g, k...] seen as [M, K] per group
  bool kn = false;           // weight stored [K, N] (Gemm transB=0, MatMul), else [N, K]
  int64_t groups = 1, K = 0, N = 0;  // K per group; N output channels in all
  bool centered = false;     // bias correction removes the mean part of its error: centered H
  backends::cpu::WindowAttrs window;  // Conv only
  std::vector<HessianAccumulator> h;  // one per group, during its calibration pass
  bool non_float = false;    // calibration produced its input as another type
  int64_t bytes() const { return groups * K * K * static_cast<int64_t>(sizeof(float)); }
};

/// The layer GPTQ works on for candidate `c` (nullopt with `why` when it does not apply).
std::optional<Layer> layer_of(const Candidate& c, const Points& pts, std::string& why) {
  const ir::Node& n = *c.node;
  if (c.slots.weight != 1 || !n.input(0)) return why = "no constant weight in input 1", std::nullopt;
  const ir::Value& w = *n.input(1);
  const auto wp = pts.weight.find(w.name);
  if (wp == pts.weight.end()) return why = "its weight stays float", std::nullopt;
  const QPoint& p = pts.points[wp->second];
  if (p.dtype != ir::DType::I8 || p.block_size > 0 || !w.initializer) return why = "its weight is not int8", std::nullopt;
  if (w.uses.size() != 1) return why = "its weight is read by several nodes", std::nullopt;
  const std::vector<int64_t>& d = w.initializer->dims();
  const auto wl = ir::weight_layout(n, d);
  if (!wl || n.op_type == "ConvTranspose") return why = n.op_type + " is not handled", std::nullopt;
  if (p.axis >= 0 && p.axis != wl->out_axis) return why = "its weight scales are not per output channel", std::nullopt;
  Layer l;
  l.node = &n;
  l.point = wp->second;
  l.N = wl->out_channels;
  if (n.op_type == "Conv") {
    if (!wl->group_divides || wl->group < 1) return why = "group does not divide the channels", std::nullopt;
    l.conv = true;
    l.groups = wl->group;
    l.K = w.initializer->numel() / std::max<int64_t>(d[0], 1);
    l.window = backends::cpu::WindowAttrs::parse(n);
  } else {
    if (n.op_type == "Gemm" && ir::GemmAttrs(n).trans_a()) return why = "Gemm with transA=1", std::nullopt;
    l.kn = wl->out_axis == 1;
    l.K = d[static_cast<size_t>(wl->in_axis)];
  }
  if (l.K <= 0 || l.N <= 0 || l.N % l.groups != 0) return why = "empty weight", std::nullopt;
  return l;  // its Hessians are allocated with its calibration pass
}

/// Adds the patches of Conv input x (float32 [N, C, spatial...]) to the layer's Hessians, a chunk
/// of output positions at a time: A [K, positions], the conv engine's own im2col (rows in the
/// weight's order: channel, then kernel dims; padded taps 0), and H += A A^T.
void add_conv_input(Layer& l, const ir::Tensor& x) {
  const std::vector<int64_t>& wd = l.node->input(1)->initializer->dims();
  const backends::cpu::ConvProblem p = backends::cpu::conv_problem(*l.node, l.window, l.groups, x.dims(), wd);
  const int64_t cg = p.c / p.group, P = p.g.out_size(), plane = p.g.in_size();
  const int64_t chunk = std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(l.K, 1), 1, P);
  std::vector<float> a(static_cast<size_t>(l.K * chunk));
  const float* src = x.data<float>().data();
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t gi = 0; gi < p.group; ++gi)
      for (int64_t p0 = 0; p0 < P; p0 += chunk) {
        const int64_t nb = std::min(chunk, P - p0);
        backends::cpu::im2col_f32(p.g, cg, src + (b * p.c + gi * cg) * plane, p0, nb, a.data());
        l.h[static_cast<size_t>(gi)].add_columns(a.data(), l.K, nb);
      }
}

/// Adds input tensor `t` of layer `l` to its Hessians (another type than float32 marks the layer).
void add_input(Layer& l, const ir::Tensor& t) {
  if (t.dtype() != ir::DType::F32 || t.rank() < 1) {
    l.non_float = true;
    return;
  }
  if (l.conv) return add_conv_input(l, t);
  const int64_t width = t.dims().back();
  l.h[0].add(t.data<float>().data(), width ? t.numel() / width : 0, width);
}

/// GPTQ codes for layer `l` (its Hessians complete) into its point, and with a centered Hessian the
/// output shift of each channel into `shift`; the record entry of its losses.
json quantize_layer(const Layer& l, QPoint& p, const GptqOptions& base, std::vector<double>& shift) {
  const ir::Tensor& wt = *l.node->input(1)->initializer;
  const float* w = wt.data<float>().data();
  const int64_t Ng = l.N / l.groups;
  BlockFormat f;
  f.bits = 8;
  f.block_size = l.K;
  f.narrow = true;
  std::vector<int32_t> codes(static_cast<size_t>(wt.numel()));
  double loss = 0, rtn_loss = 0;
  for (int64_t gi = 0; gi < l.groups; ++gi) {
    std::vector<float> wkn(static_cast<size_t>(l.K * Ng)), scales(static_cast<size_t>(Ng));
    auto at = [&](int64_t k, int64_t j) {  // flat index of (input feature k, output column j) in the weight
      const int64_t o = gi * Ng + j;
      return static_cast<size_t>(l.kn ? k * l.N + o : o * l.K + k);
    };
    for (int64_t j = 0; j < Ng; ++j) {
      scales[static_cast<size_t>(j)] = p.scale[p.axis < 0 ? 0 : static_cast<size_t>(gi * Ng + j)];
      for (int64_t k = 0; k < l.K; ++k) wkn[static_cast<size_t>(k * Ng + j)] = w[at(k, j)];
    }
    GptqOptions o = base;
    o.column_scales = &scales;
    o.zero_unseen_rows = false;
    const HessianAccumulator& h = l.h[static_cast<size_t>(gi)];
    const GptqResult r = gptq_quantize(wkn.data(), l.K, Ng, l.centered ? h.centered_hessian() : h.hessian(), f, o);
    for (int64_t j = 0; j < Ng; ++j)
      for (int64_t k = 0; k < l.K; ++k) codes[at(k, j)] = r.q.codes[static_cast<size_t>(k * Ng + j)];
    if (l.centered) {
      shift.resize(static_cast<size_t>(l.N));
      for (int64_t j = 0; j < Ng; ++j) {
        double d = 0;
        for (int64_t k = 0; k < l.K; ++k) {
          const float wq = static_cast<float>(r.q.codes[static_cast<size_t>(k * Ng + j)]) * scales[static_cast<size_t>(j)];
          d += (static_cast<double>(wq) - static_cast<double>(w[at(k, j)])) * h.sum[k];
        }
        shift[static_cast<size_t>(gi * Ng + j)] = d / static_cast<double>(h.tokens);
      }
    }
    loss += r.loss;
    rtn_loss += r.rtn_loss;
  }
  p.codes = pack_codes(codes, ir::DType::I8);
  p.method = "gptq";
  return {{"weight", p.tensor}, {"loss", loss}, {"rtn_loss", rtn_loss}, {"ratio", rtn_loss > 0 ? loss / rtn_loss : 1.0}};
}

/// Consecutive runs of the layers `which` whose Hessians together stay within `budget` bytes (a
/// layer over it alone in its run), as indices into `layers`.
std::vector<std::vector<size_t>> passes_of(const std::vector<Layer>& layers, const std::vector<size_t>& which,
                                           int64_t budget) {
  std::vector<std::vector<size_t>> out;
  int64_t used = 0;
  for (size_t i : which) {
    if (out.empty() || used + layers[i].bytes() > budget) out.emplace_back(), used = 0;
    out.back().push_back(i);
    used += layers[i].bytes();
  }
  return out;
}

/// The part of every layer's reuse key (calibration_cache.h) that the layers share: the model's
/// content, the samples' digest and GPTQ's options; "" when reuse is off.
std::string reuse_base(const ir::Model& model, const Config& cfg, const PassContext& ctx, const GptqOptions& go) {
  if (!calibration_reuse()) return "";
  const CalibrationConfig cc = calibration_config(cfg, ctx, "algorithm=gptq needs calibration data");
  const std::string samples = hash_sample_files(calibration_sample_dirs(cc.data_dir, cc.max_samples, cc.holdout));
  return sha256_hex(ir::print_model(model)) + "\n" + samples + "\ndamp " + std::to_string(go.damp) + " act_order " +
         std::to_string(go.act_order) + " block " + std::to_string(go.lazy_block) + "\n";
}

/// Layer `l`'s reuse key: the shared part, its node, weight, scales and whether H is centered.
std::string reuse_key(const std::string& base, const Layer& l, const QPoint& p) {
  std::string s = base + node_label(*l.node) + "\n" + p.tensor + "\n" + (l.centered ? "centered\n" : "plain\n");
  s.append(reinterpret_cast<const char*>(p.scale.data()), p.scale.size() * sizeof(float));
  return sha256_hex(s);
}

/// Collects the Hessians of `layers[pass]` over the calibration samples and turns each into its
/// outcome: GPTQ codes, or why it keeps nearest codes (codes empty, `loss` the skipped entry).
/// Returns the calibration record.
json run_pass(const ir::Model& model, const Config& cfg, const PassContext& ctx, std::vector<Layer>& layers,
              const std::vector<size_t>& pass, Points& pts, const GptqOptions& go, std::vector<KeptCodes>& outcome) {
  std::map<std::string, std::vector<size_t>> readers;  // input name -> layers of this pass
  for (size_t i : pass) {
    readers[layers[i].node->input(0)->name].push_back(i);
    layers[i].h.assign(static_cast<size_t>(layers[i].groups), HessianAccumulator(layers[i].K));
  }
  CalibrationConfig cc = calibration_config(cfg, ctx, "algorithm=gptq needs calibration data for the inputs of " +
                                                          std::to_string(pass.size()) + " weighted layers");
  for (const auto& [name, _] : readers) cc.tap_watch.push_back(name);
  cc.stop_after_watched = true;
  cc.tap = [&](const std::string& name, const ir::Tensor& t) {
    for (size_t i : readers.at(name)) add_input(layers[i], t);
  };
  const CalibrationResult r = calibrate(model, {}, cc);
  for (size_t i : pass) {
    Layer& l = layers[i];
    KeptCodes& o = outcome[i];
    const std::string node = node_label(*l.node);
    if (l.h[0].tokens == 0 || l.non_float) {
      o.loss = {{"node", node}, {"reason", "calibration never produced its input as float32"}};
    } else if (l.h[0].tokens < kRowsPerInput * l.K) {
      o.loss = {{"node", node},
                {"reason", "too few calibration rows (" + std::to_string(l.h[0].tokens) + ") for its " +
                               std::to_string(l.K) + " inputs: rounded to nearest"}};
    } else {
      QPoint& p = pts.points[l.point];
      o.loss = quantize_layer(l, p, go, o.shift);
      o.codes = p.codes;
    }
    l.h.clear();
    l.h.shrink_to_fit();
  }
  return {{"data", cfg.calib}, {"samples", r.samples}, {"files", r.files}, {"sha256", r.sha256}};
}

}  // namespace

StaticGptq round_weights_gptq(const ir::Model& model, const Selection& sel, Points& pts, const Config& cfg,
                              const PassContext& ctx) {
  StaticGptq out;
  const WeightOnlyConfig& wc = cfg.weight_only_cfg;
  if (!wc.gptq || cfg.dynamic || cfg.weight_only) return out;
  out.enabled = true;
  std::vector<Layer> layers;
  json skipped = json::array(), losses = json::array();
  for (const Candidate& c : sel.nodes) {
    std::string why;
    if (c.slots.weight < 0) continue;
    if (auto l = layer_of(c, pts, why)) {
      l->centered = cfg.bias_correction && c.slots.bias >= 0;
      layers.push_back(std::move(*l));
    } else {
      skipped.push_back({{"node", node_label(*c.node)}, {"reason", why}});
    }
  }
  GptqOptions go;
  go.damp = wc.damp;
  go.act_order = wc.act_order;
  go.lazy_block = wc.lazy_block;
  const auto t0 = std::chrono::steady_clock::now();
  // Within the escalation ladder, layers whose key was seen before take the kept outcome.
  const std::string base = reuse_base(model, cfg, ctx, go);
  std::vector<KeptCodes> outcome(layers.size());
  std::vector<std::string> keys(layers.size());
  std::vector<size_t> pending;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!base.empty()) keys[i] = reuse_key(base, layers[i], pts.points[layers[i].point]);
    if (auto kept = base.empty() ? std::nullopt : kept_codes(keys[i])) outcome[i] = std::move(*kept);
    else pending.push_back(i);
  }
  json calibration = json::object();
  if (auto kept = base.empty() ? std::nullopt : kept_codes(sha256_hex(base + "calibration"))) calibration = kept->loss;
  const std::vector<std::vector<size_t>> passes = passes_of(layers, pending, hessian_budget(model));
  for (const std::vector<size_t>& pass : passes) {
    calibration = run_pass(model, cfg, ctx, layers, pass, pts, go, outcome);
    for (size_t i : pass)
      if (!base.empty()) keep_codes(keys[i], outcome[i]);
  }
  if (!base.empty() && !passes.empty()) keep_codes(sha256_hex(base + "calibration"), {"", {}, calibration});
  for (size_t i = 0; i < layers.size(); ++i) {
    KeptCodes& o = outcome[i];
    if (o.codes.empty()) {
      skipped.push_back(std::move(o.loss));
      continue;
    }
    QPoint& p = pts.points[layers[i].point];
    p.codes = std::move(o.codes);
    p.method = "gptq";
    if (!o.shift.empty()) out.shifts[p.tensor] = std::move(o.shift);
    losses.push_back(std::move(o.loss));
    ++out.layers;
  }
  out.samples = calibration.value("samples", int64_t{0});
  spdlog::info("quantize: gptq: codes of {} weights ({} layers as an earlier attempt left them) from {} samples in {:.2f} s "
               "({} calibration passes)",
               out.layers, layers.size() - pending.size(), out.samples,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), passes.size());
  out.record["damp"] = wc.damp;
  out.record["act_order"] = wc.act_order;
  out.record["calibration"] = calibration;
  out.record["losses"] = std::move(losses);
  out.record["skipped"] = std::move(skipped);
  return out;
}

}  // namespace mcc::transforms::quantize
