// prune (mode=unstructured): magnitude pruning of individual weights.
//
// Before:  Y = Conv(X, W, B)                 W: 64x32x3x3, any values
// After:   Y = Conv(X, W', B)                W' = W with the k smallest |w| set to +0.0
//   per layer (scope=layer):   k = round(s_l * numel(W_l)) for each layer l, s_l = sparsity or the
//                              first matching override rule
//   global   (scope=global):   k = round(s * sum_l numel(W_l)) over all layers without an override,
//                              ranked together (one threshold across layers)
// Ranking key (|w|, layer, element index): ties are broken by position, so the result does not
// depend on the sort algorithm. The weight keeps its name, dtype and shape; biases and
// normalisation parameters (BatchNormalization, LayerNormalization inputs) are never pruned.
//
// Weights: input 1 of Conv, ConvTranspose, Gemm (B) and MatMul when it is an initializer of a
// float dtype (f32, f64, f16, bf16). A weight shared by several layers is pruned once, by the
// first layer (graph order) that reads it.
// Does not apply when: the weight is computed (not an initializer), for example behind a
// DequantizeLinear after quantize (prune before quantize), or is an integer tensor; nodes
// inside If/Loop/Scan bodies are not pruned.
// Numerics: magnitudes are compared in float32 (f64 weights in double); zeroing writes all-zero
// bytes, which is +0 in every float format.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "ir/errors.h"
#include "transforms/prune/prune.h"

namespace mcc::transforms::prune {

namespace {

bool float_dtype(ir::DType d) {
  return d == ir::DType::F32 || d == ir::DType::F64 || d == ir::DType::F16 || d == ir::DType::BF16;
}

std::vector<double> magnitudes(const ir::Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  ir::dispatch<ir::DType::F32, ir::DType::F64, ir::DType::F16, ir::DType::BF16>(t.dtype(), "prune", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto d = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, double>) out[i] = std::fabs(d[i]);
      else out[i] = std::fabs(static_cast<double>(static_cast<float>(d[i])));
    }
  });
  return out;
}

struct Layer {
  ir::Value* weight = nullptr;
  std::vector<std::string> nodes;
  std::string op;
  double target = 0;
  bool overridden = false;
  std::vector<bool> mask;
};

/// Applies `mask` (set = zero the element) to the weight; returns the zero count after and adds
/// the number of elements that were nonzero before to `newly`.
int64_t apply_mask(ir::Value& w, const std::vector<bool>& mask, int64_t& newly) {
  const auto before = magnitudes(*w.initializer);
  for (size_t i = 0; i < mask.size(); ++i) newly += mask[i] && before[i] != 0.0;
  ir::Tensor t = w.initializer->clone();
  t.external.reset();
  const size_t es = ir::dtype_size(t.dtype());
  std::byte* p = t.mutable_raw();
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) std::memset(p + i * es, 0, es);
  const auto mags = magnitudes(t);
  int64_t zeros = 0;
  for (double x : mags) zeros += x == 0.0;
  w.initializer = std::move(t);
  return zeros;
}

nlohmann::ordered_json shape_json(const ir::Tensor& t) {
  nlohmann::ordered_json s = nlohmann::ordered_json::array();
  for (int64_t d : t.dims()) s.push_back(d);
  return s;
}

void finish_stats(int64_t layers, int64_t weights, int64_t pruned, int64_t newly, int64_t zeros,
                  nlohmann::ordered_json& stats) {
  stats["layers_pruned"] = layers;
  stats["weights"] = weights;
  stats["weights_masked"] = pruned;
  stats["weights_zeroed"] = newly;
  stats["sparsity"] = weights ? static_cast<double>(zeros) / static_cast<double>(weights) : 0.0;
}

}  // namespace

ir::Value* prunable_weight(const ir::Node& n) {
  if (!(n.is("Conv") || n.is("ConvTranspose") || n.is("Gemm") || n.is("MatMul"))) return nullptr;
  ir::Value* w = n.input(1);
  if (!w || !w->initializer || !float_dtype(w->initializer->dtype()) || w->initializer->numel() == 0) return nullptr;
  return w;
}

nlohmann::ordered_json prune_unstructured(ir::Model& m, const UnstructuredConfig& cfg, nlohmann::ordered_json& stats) {
  std::vector<Layer> layers;
  std::map<const ir::Value*, size_t> seen;
  for (ir::Node* n : m.graph->nodes()) {
    ir::Value* w = prunable_weight(*n);
    if (!w) continue;
    const std::string key = node_key(*n);
    if (auto it = seen.find(w); it != seen.end()) {
      layers[it->second].nodes.push_back(key);
      continue;
    }
    if (!cfg.selector->selected(*n)) continue;
    Layer l;
    l.weight = w;
    l.nodes.push_back(key);
    l.op = n->op_type;
    if (auto ov = cfg.selector->override_for(*n)) {
      l.target = *ov;
      l.overridden = true;
    } else {
      l.target = cfg.sparsity;
    }
    seen.emplace(w, layers.size());
    layers.push_back(std::move(l));
  }

  // Per-layer selection (every layer in scope=layer; overridden layers in scope=global).
  for (Layer& l : layers) {
    const size_t n = static_cast<size_t>(l.weight->initializer->numel());
    l.mask.assign(n, false);
    if (cfg.global && !l.overridden) continue;
    const auto k = static_cast<size_t>(std::llround(l.target * static_cast<double>(n)));
    if (k == 0) continue;
    const auto mag = magnitudes(*l.weight->initializer);
    std::vector<uint32_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = static_cast<uint32_t>(i);
    auto less = [&](uint32_t a, uint32_t b) { return mag[a] < mag[b] || (mag[a] == mag[b] && a < b); };
    std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k - 1), idx.end(), less);
    for (size_t i = 0; i < k; ++i) l.mask[idx[i]] = true;
  }
  if (cfg.global) {
    struct Entry { double mag; uint32_t layer, index; };
    std::vector<Entry> pool;
    for (size_t li = 0; li < layers.size(); ++li) {
      if (layers[li].overridden) continue;
      const auto mag = magnitudes(*layers[li].weight->initializer);
      for (size_t i = 0; i < mag.size(); ++i)
        pool.push_back({mag[i], static_cast<uint32_t>(li), static_cast<uint32_t>(i)});
    }
    const auto k = static_cast<size_t>(std::llround(cfg.sparsity * static_cast<double>(pool.size())));
    if (k > 0) {
      auto less = [](const Entry& a, const Entry& b) {
        if (a.mag != b.mag) return a.mag < b.mag;
        if (a.layer != b.layer) return a.layer < b.layer;
        return a.index < b.index;
      };
      std::nth_element(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(k - 1), pool.end(), less);
      for (size_t i = 0; i < k; ++i) layers[pool[i].layer].mask[pool[i].index] = true;
    }
  }

  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  int64_t weights = 0, pruned = 0, zeros_total = 0, touched = 0, newly = 0;
  for (Layer& l : layers) {
    const int64_t n = l.weight->initializer->numel();
    const int64_t k = std::count(l.mask.begin(), l.mask.end(), true);
    weights += n;
    pruned += k;
    const int64_t zeros = k > 0 ? apply_mask(*l.weight, l.mask, newly) : [&] {
      int64_t z = 0;
      for (double x : magnitudes(*l.weight->initializer)) z += x == 0.0;
      return z;
    }();
    zeros_total += zeros;
    touched += k > 0;
    nlohmann::ordered_json e;
    e["value"] = l.weight->name;
    e["nodes"] = l.nodes;
    e["op"] = l.op;
    e["shape"] = shape_json(*l.weight->initializer);
    e["elements"] = n;
    e["target"] = cfg.global && !l.overridden ? cfg.sparsity : l.target;
    e["pruned"] = k;
    e["zeros"] = zeros;
    e["sparsity"] = static_cast<double>(zeros) / static_cast<double>(n);
    const EncodedMask em = encode_mask(l.mask);
    e["mask"] = {{"encoding", em.encoding}, {"data", em.data}};
    tensors.push_back(std::move(e));
  }
  finish_stats(touched, weights, pruned, newly, zeros_total, stats);
  return tensors;
}

void replay_unstructured(ir::Model& m, const nlohmann::ordered_json& record, nlohmann::ordered_json& stats) {
  if (!record.contains("tensors") || !record["tensors"].is_array())
    throw ModelError("prune: the state's record has no 'tensors' list");
  int64_t weights = 0, pruned = 0, zeros_total = 0, touched = 0, newly = 0;
  std::set<std::string> done;
  for (const auto& e : record["tensors"]) {
    std::string name;
    try {
      name = e.at("value").get<std::string>();
      ir::Value* w = m.graph->find_value(name);
      if (!w || !w->initializer || !float_dtype(w->initializer->dtype()))
        throw ModelError("the model has no float weight initializer named '" + name + "'");
      if (!done.insert(name).second) throw ModelError("weight '" + name + "' recorded twice");
      const int64_t n = w->initializer->numel();
      if (e.at("elements").get<int64_t>() != n)
        throw ModelError("weight '" + name + "' has " + std::to_string(n) + " elements, the record " +
                         std::to_string(e.at("elements").get<int64_t>()));
      const auto& mk = e.at("mask");
      const auto mask = decode_mask({mk.at("encoding").get<std::string>(), mk.at("data").get<std::string>()},
                                    static_cast<size_t>(n));
      const int64_t k = std::count(mask.begin(), mask.end(), true);
      weights += n;
      pruned += k;
      touched += k > 0;
      if (k > 0) zeros_total += apply_mask(*w, mask, newly);
      else for (double x : magnitudes(*w->initializer)) zeros_total += x == 0.0;
    } catch (const ModelError& ex) {
      throw ModelError("prune: the state's record does not fit the model: " + ex.message());
    } catch (const nlohmann::json::exception& ex) {
      throw ModelError(std::string("prune: the state's record is invalid") +
                       (name.empty() ? "" : " at weight '" + name + "'") + ": " + ex.what());
    }
  }
  finish_stats(touched, weights, pruned, newly, zeros_total, stats);
}

}  // namespace mcc::transforms::prune
