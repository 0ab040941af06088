// Weight-only quantization: the choice of points and their codes (see quantize/weight_only.h).
#include "transforms/quantize/weight_only.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "ir/errors.h"
#include "ir/free_memory.h"
#include "ir/output_names.h"
#include "transforms/quantize/block_quant.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/dynamic.h"
#include "transforms/quantize/gptq.h"
#include "transforms/quantize/mixed_bits.h"
#include "transforms/quantize/opset.h"
#include "transforms/quantize/policy.h"


namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

/// The weight point of float32 constant w [K, N] with its RTN parameters (codes derived on write).
QPoint rtn_point(const ir::Value& w, const BlockFormat& f) {
  const ir::Tensor& t = *w.initializer;
  BlockQuantized q = rtn_quantize(t.data<float>().data(), t.dims()[0], t.dims()[1], f);
  QPoint p;
  p.tensor = w.name;
  p.role = Role::Weight;
  p.dtype = f.dtype();
  p.axis = 0;
  p.block_size = f.block_size;
  p.scale = std::move(q.scale);
  p.zero_point = std::move(q.zero_point);
  p.method = "rtn";
  return p;
}

/// Layer-input Hessians over the calibration samples, by input tensor name. With `stop_early`,
/// each sample's run ends once the last of these inputs has been produced.
std::map<std::string, HessianAccumulator> collect_hessians(const ir::Model& model, const std::vector<Candidate>& kept,
                                                           const Config& cfg, const PassContext& ctx, json& calib_record,
                                                           int64_t& samples, bool stop_early = false) {
  std::map<std::string, HessianAccumulator> hess;
  std::vector<std::string> inputs;
  for (const Candidate& c : kept) {
    const std::string& a = c.node->input(0)->name;
    if (hess.count(a)) continue;
    hess.emplace(a, HessianAccumulator(c.node->input(1)->initializer->dims()[0]));
    inputs.push_back(a);
  }
  if (inputs.empty()) return hess;
  CalibrationConfig cc = calibration_config(cfg, ctx, "algorithm=gptq needs calibration data for the inputs of " +
                                                          std::to_string(kept.size()) + " MatMul layers");
  cc.tap_watch = inputs;
  cc.stop_after_watched = stop_early;
  cc.tap = [&](const std::string& name, const ir::Tensor& t) {
    if (t.dtype() != ir::DType::F32 || t.rank() < 1) throw ModelError("the input '" + name + "' of a MatMul is not float32");
    HessianAccumulator& h = hess.at(name);
    const int64_t width = t.dims().back();
    h.add(t.data<float>().data(), width ? t.numel() / width : 0, width);
  };
  const auto t0 = std::chrono::steady_clock::now();
  const CalibrationResult r = calibrate(model, {}, cc);
  spdlog::info("quantize: gptq: {} layer-input Hessians over {} samples in {:.2f} s", inputs.size(), r.samples,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  calib_record["data"] = cfg.calib;
  calib_record["samples"] = r.samples;
  calib_record["files"] = r.files;
  calib_record["sha256"] = r.sha256;
  calib_record["method"] = "gptq";
  samples = r.samples;
  return hess;
}

/// Mixed 4/8 bits (mixed_bits.h): the weights whose 4-bit rounding costs most, weighted by the
/// calibration inputs' mean squares when there are Hessians, plus every layer writing a graph
/// output (an LM head), become 8-bit; the choice goes into res.mixed_bits.
std::set<std::string> mixed_eight_bit(const ir::Model& model, const std::vector<Candidate>& kept, const BlockFormat& f,
                                      double ratio, const std::map<std::string, HessianAccumulator>& hess,
                                      WeightOnlyResult& res) {
  std::map<std::string, Eigen::VectorXd> mean_square;
  std::vector<MixedBitsWeight> weights;
  std::set<std::string> output_layers;  // weights of layers writing a graph output (an LM head): 8-bit, outside R
  for (const Candidate& c : kept) {
    const ir::Value* y = c.node->outputs.empty() ? nullptr : c.node->outputs[0];
    const auto& outs = model.graph->outputs;
    if (y && std::find(outs.begin(), outs.end(), y) != outs.end()) output_layers.insert(c.node->input(1)->name);
  }
  for (const Candidate& c : kept) {
    const ir::Value& w = *c.node->input(1);
    if (output_layers.count(w.name)) continue;
    if (std::any_of(weights.begin(), weights.end(), [&](const MixedBitsWeight& m) { return m.name == w.name; })) continue;
    if (!hess.empty()) {
      Eigen::VectorXd d = Eigen::VectorXd::Zero(w.initializer->dims()[0]);
      int64_t tokens = 0;
      std::set<std::string> seen;
      for (const Candidate& r : kept)
        if (r.node->input(1) == &w && seen.insert(r.node->input(0)->name).second) {
          const HessianAccumulator& h = hess.at(r.node->input(0)->name);
          d += h.H.diagonal().cast<double>();
          tokens += h.tokens;
        }
      mean_square[w.name] = tokens ? Eigen::VectorXd(d / static_cast<double>(tokens)) : d;
    }
    weights.push_back({w.name, &*w.initializer, nullptr});
  }
  for (auto& m : weights)
    if (auto it = mean_square.find(m.name); it != mean_square.end()) m.mean_square = &it->second;
  MixedBitsChoice choice = choose_eight_bit(weights, f, ratio);
  std::set<std::string> eight_bit = std::move(choice.eight_bit);
  eight_bit.insert(output_layers.begin(), output_layers.end());
  res.mixed_bits = std::move(choice.record);
  res.mixed_bits["output_layers_8bit"] = output_layers;
  return eight_bit;
}

/// The weights of kept layers writing a graph output named like causal-LM logits (ir/output_names.h),
/// each once, in layer order.
std::vector<std::string> lm_head_weights(const ir::Model& model, const std::vector<Candidate>& kept) {
  std::vector<std::string> out;
  const auto& outs = model.graph->outputs;
  for (const Candidate& c : kept) {
    const ir::Value* y = c.node->outputs.empty() ? nullptr : c.node->outputs[0];
    if (!y || std::find(outs.begin(), outs.end(), y) == outs.end()) continue;
    const std::string& w = c.node->input(1)->name;
    if (ir::names_lm_logits(y->name) && std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  }
  return out;
}

}  // namespace

int64_t hessian_budget(const ir::Model& model) {
  return std::max<int64_t>(int64_t{64} << 20, ir::count_initializer_bytes(*model.graph) / 8);
}

std::vector<std::vector<Candidate>> gptq_groups(const ir::Model& model, const std::vector<Candidate>& kept, int64_t budget) {
  // Clusters: union-find over layers joined by a common weight or input.
  const size_t n = kept.size();
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), size_t{0});
  std::function<size_t(size_t)> root = [&](size_t i) { return parent[i] == i ? i : parent[i] = root(parent[i]); };
  std::map<const ir::Value*, size_t> first_by_value;
  for (size_t i = 0; i < n; ++i)
    for (const ir::Value* v : {kept[i].node->input(0), kept[i].node->input(1)}) {
      auto [it, fresh] = first_by_value.emplace(v, i);
      if (!fresh) parent[root(i)] = root(it->second);
    }
  std::map<const ir::Node*, size_t> position;
  for (const ir::Node* node : model.graph->nodes()) position.emplace(node, position.size());
  auto pos = [&](const Candidate& c) {
    const ir::Node* p = c.node->input(0)->producer;
    const auto it = p ? position.find(p) : position.end();
    return it == position.end() ? size_t{0} : it->second;
  };
  struct Cluster { size_t last = 0, first_layer = 0; int64_t bytes = 0; std::vector<size_t> layers; std::set<const ir::Value*> inputs; };
  std::map<size_t, Cluster> by_root;
  for (size_t i = 0; i < n; ++i) {
    Cluster& c = by_root[root(i)];
    if (c.layers.empty()) c.first_layer = i;
    c.layers.push_back(i);
    c.last = std::max(c.last, pos(kept[i]));
    if (c.inputs.insert(kept[i].node->input(0)).second) {
      const int64_t k = kept[i].node->input(1)->initializer->dims()[0];
      c.bytes += 4 * k * k;
    }
  }
  std::vector<Cluster*> order;
  for (auto& [r, c] : by_root) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const Cluster* a, const Cluster* b) {
    return a->last != b->last ? a->last < b->last : a->first_layer < b->first_layer;
  });
  std::vector<std::vector<Candidate>> groups;
  int64_t held = 0;
  for (const Cluster* c : order) {
    // A small cluster (an LM head's input: one K x K Hessian) may take the pass past its budget by
    // an eighth rather than cost a pass of its own, which would run the whole model again.
    const int64_t slack = c->bytes <= budget / 16 ? budget / 8 : 0;
    if (groups.empty() || held + c->bytes > budget + slack) {
      groups.emplace_back();
      held = 0;
    }
    held += c->bytes;
    for (size_t i : c->layers) groups.back().push_back(kept[i]);
  }
  return groups;
}

BlockFormat block_format(const WeightOnlyConfig& w) {
  BlockFormat f;
  f.bits = w.bits;
  f.block_size = w.block_size;
  f.zero_point = w.zero_point;
  f.search = w.scale_search;
  return f;
}

std::string weight_only_refusal(const Candidate& c) {
  const ir::Node& n = *c.node;
  if (n.op_type != "MatMul") return "mode=weight_only quantizes MatMul only";
  const ir::Value* w = n.input(1);
  if (!w || !w->initializer || w->initializer->dtype() != ir::DType::F32 || w->initializer->rank() != 2)
    return "its weight (input B) is not a float32 constant matrix";
  const ir::Value* a = n.input(0);
  if (!a || a->initializer || (a->dtype != ir::DType::F32 && a->dtype != ir::DType::Undefined))
    return "its input A is not a float32 activation";
  return "";
}

WeightOnlyResult weight_only_points(const ir::Model& model, Selection& sel, const Config& cfg, const PassContext& ctx) {
  const WeightOnlyConfig& wc = cfg.weight_only_cfg;
  const BlockFormat f = block_format(wc);
  auto skip = [&](const Candidate& c, const std::string& why) {
    sel.skipped.push_back({{"node", node_label(*c.node)}, {"op", c.node->op_type}, {"reason", why}});
  };
  std::vector<Candidate> kept;
  for (const Candidate& c : sel.nodes)
    if (const std::string why = weight_only_refusal(c); why.empty()) kept.push_back(c);
    else skip(c, why);
  // A weight read by a node that stays float keeps its readers float.
  keep_candidates_with_consistent_weights(model, sel, kept, [](const Candidate& c) { return c.slots.weight_axis; });

  WeightOnlyResult res;
  std::map<std::string, HessianAccumulator> hess;
  // Mixed bits weigh rounding errors by the calibration inputs when there are any.
  const bool mixed = f.bits == 4 && wc.ratio < 1;
  if (mixed && !cfg.calib.empty()) hess = collect_hessians(model, kept, cfg, ctx, res.gptq["calibration"], res.samples);
  // Mixed 4/8 bits: the weights whose 4-bit rounding costs most become 8-bit (mixed_bits.h).
  std::set<std::string> eight_bit;
  if (mixed) eight_bit = mixed_eight_bit(model, kept, f, wc.ratio, hess, res);
  // An LM head (a layer writing causal-LM logits) takes finer 4-bit blocks (lm_head_block_size).
  std::set<std::string> fine_blocks;
  if (f.bits == 4 && wc.lm_head_block_size > 0 && wc.lm_head_block_size < f.block_size)
    for (const std::string& w : lm_head_weights(model, kept))
      if (!eight_bit.count(w) && fine_blocks.insert(w).second) res.lm_heads_fine.push_back(w);
  BlockFormat f8 = f, fine = f;
  f8.bits = 8;
  fine.block_size = wc.lm_head_block_size;
  GptqOptions go;
  go.damp = wc.damp;
  go.act_order = wc.act_order;
  go.lazy_block = wc.lazy_block;
  auto format_of = [&](const ir::Value& w) -> const BlockFormat& {
    return eight_bit.count(w.name) ? f8 : fine_blocks.count(w.name) ? fine : f;
  };
  // GPTQ points (codes packed as they are made) and their loss records, by weight name.
  std::map<std::string, std::pair<QPoint, json>> gptq_done;
  auto gptq_layers = [&](const std::vector<Candidate>& layers, std::map<std::string, HessianAccumulator> h) {
    for (const Candidate& c : layers) {
      const ir::Value& w = *c.node->input(1);
      if (gptq_done.count(w.name)) continue;
      const ir::Tensor& t = *w.initializer;
      const int64_t K = t.dims()[0], N = t.dims()[1];
      Eigen::MatrixXd H = Eigen::MatrixXd::Zero(K, K);
      std::set<std::string> seen;  // each input once, whichever readers share it
      for (const Candidate& r : kept)
        if (r.node->input(1) == &w && seen.insert(r.node->input(0)->name).second) H += h.at(r.node->input(0)->name).H.cast<double>();
      const BlockFormat& fw = format_of(w);
      GptqResult q = gptq_quantize(t.data<float>().data(), K, N, H, fw, go);
      QPoint p;
      p.tensor = w.name;
      p.role = Role::Weight;
      p.dtype = fw.dtype();
      p.axis = 0;
      p.block_size = fw.block_size;
      p.codes = pack_codes(q.q.codes, p.dtype);
      p.scale = std::move(q.q.scale);
      p.zero_point = std::move(q.q.zero_point);
      p.method = "gptq";
      json loss = {{"weight", w.name}, {"loss", q.loss}, {"rtn_loss", q.rtn_loss},
                   {"ratio", q.rtn_loss > 0 ? q.loss / q.rtn_loss : 1.0}};
      gptq_done.emplace(w.name, std::make_pair(std::move(p), std::move(loss)));
      // Hessians no weight still to come reads are dropped now, not with the group.
      for (auto it = h.begin(); it != h.end();) {
        const bool pending = std::any_of(layers.begin(), layers.end(), [&](const Candidate& r) {
          return r.node->input(0)->name == it->first && !gptq_done.count(r.node->input(1)->name);
        });
        it = pending ? std::next(it) : h.erase(it);
      }
    }
  };
  if (wc.gptq && !hess.empty()) {
    gptq_layers(kept, std::move(hess));
  } else if (wc.gptq) {
    // Streamed: one calibration pass per group of layers, each group's Hessians dropped once its
    // weights are quantized, so they never all exist at once. The codes do not depend on the
    // grouping: every Hessian sums the same samples.
    const std::vector<std::vector<Candidate>> groups = gptq_groups(model, kept, hessian_budget(model));
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      if (groups.size() > 1)
        spdlog::info("quantize: gptq: pass {} of {} ({} layers)", gi + 1, groups.size(), groups[gi].size());
      gptq_layers(groups[gi], collect_hessians(model, groups[gi], cfg, ctx, res.gptq["calibration"], res.samples, true));
      ir::release_free_memory();  // this pass's Hessians and executor buffers
    }
  }
  hess.clear();
  json losses = json::array();
  Points& pts = res.points;
  for (const Candidate& c : kept) {
    const ir::Value& w = *c.node->input(1);
    if (const auto it = pts.weight.find(w.name); it != pts.weight.end()) {
      pts.points[it->second].consumers.push_back(node_label(*c.node));
      continue;
    }
    QPoint p;
    const BlockFormat& fw = format_of(w);
    if (wc.gptq) {
      auto& [point, loss] = gptq_done.at(w.name);
      p = std::move(point);
      losses.push_back(std::move(loss));
    } else {
      p = rtn_point(w, fw);
    }
    p.consumers.push_back(node_label(*c.node));
    pts.weight[w.name] = pts.points.size();
    pts.points.push_back(std::move(p));
    ++pts.weights;
  }
  if (cfg.embeddings) add_embedding_points(model, cfg, pts);
  if (wc.gptq) {
    res.gptq["damp"] = wc.damp;
    res.gptq["act_order"] = wc.act_order;
    res.gptq["lazy_block"] = wc.lazy_block;
    res.gptq["losses"] = losses;
  }
  sel.nodes = kept;
  sel.activations.clear();
  sel.groups.clear();
  return res;
}

void require_weight_only_opset(const ir::Model& model, const Config& cfg, Plan& plan) {
  plan.matmul_nbits = cfg.weight_only_cfg.matmul_nbits;
  // The QDQ form needs DequantizeLinear's block_size (21); MatMulNBits needs nothing, unless
  // embedding tables are stored int8 per column (DequantizeLinear with an axis: 13).
  const int64_t need = !plan.matmul_nbits ? 21 : cfg.embeddings ? 13 : 0;
  if (plan.opset_from >= need) {
    if (need == 21) plan.ir_to = std::max<int64_t>(model.ir_version, 10);
    return;
  }
  if (const std::string why = raise_blocker(model, plan.opset_from, need); !why.empty())
    throw UnsupportedError("quantize: mode=weight_only writes DequantizeLinear with " +
                           std::string(need == 21 ? "block_size" : "an axis (embedding tables)") + ", which needs ai.onnx opset >= " +
                           std::to_string(need) + ", and the model imports opset " + std::to_string(plan.opset_from) +
                           ", which cannot be raised: " + why + (need == 21 ? "; try weight_format=matmul_nbits" : ""));
  plan.opset_to = need;
  plan.ir_to = std::max<int64_t>(model.ir_version, need >= 21 ? 10 : 7);
}

}  // namespace mcc::transforms::quantize
