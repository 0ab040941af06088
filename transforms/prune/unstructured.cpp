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
#include "ir/tensor_streaming.h"
#include "transforms/prune/magnitude_select.h"
#include "transforms/prune/prune.h"

namespace mcc::transforms::prune {

namespace {

bool float_dtype(ir::DType d) {
  return d == ir::DType::F32 || d == ir::DType::F64 || d == ir::DType::F16 || d == ir::DType::BF16;
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
/// the number of elements that were nonzero before to `newly`. The old weight is read once and
/// released as it goes (ir/tensor_streaming.h), so a layer costs one copy of its weight, not two.
int64_t apply_mask(ir::Value& w, const std::vector<bool>& mask, int64_t& newly) {
  ir::Tensor src = std::move(*w.initializer);
  ir::Tensor t = ir::Tensor::allocate(src.dtype(), src.dims());
  t.name = src.name;
  t.doc_string = src.doc_string;
  t.proto_passthrough = src.proto_passthrough;
  const size_t es = ir::dtype_size(t.dtype());
  std::byte* out = t.mutable_raw();
  auto is_zero = [&](const std::byte* p) {  // +0 or -0: every bit but the sign (the top one) clear
    uint64_t bits = 0;
    std::memcpy(&bits, p, es);
    return (bits << (64 - 8 * es + 1)) == 0;
  };
  int64_t zeros = 0;
  ir::consume_in_chunks(std::move(src), [&](const std::byte* data, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const std::byte* p = data + static_cast<size_t>(i) * es;
      const bool was_zero = is_zero(p);
      if (mask[static_cast<size_t>(i)]) {
        newly += !was_zero;
        ++zeros;  // the output bytes are already zero
      } else {
        std::memcpy(out + static_cast<size_t>(i) * es, p, es);
        zeros += was_zero;
      }
    }
  });
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
    mark_smallest(*l.weight->initializer, std::llround(l.target * static_cast<double>(n)), l.mask);
  }
  if (cfg.global) {
    std::vector<const ir::Tensor*> pool;
    std::vector<std::vector<bool>*> masks;
    int64_t total = 0;
    for (Layer& l : layers) {
      if (l.overridden) continue;
      pool.push_back(&*l.weight->initializer);
      masks.push_back(&l.mask);
      total += l.weight->initializer->numel();
    }
    mark_smallest_global(pool, std::llround(cfg.sparsity * static_cast<double>(total)), masks);
  }

  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  int64_t weights = 0, pruned = 0, zeros_total = 0, touched = 0, newly = 0;
  for (Layer& l : layers) {
    const int64_t n = l.weight->initializer->numel();
    const int64_t k = std::count(l.mask.begin(), l.mask.end(), true);
    weights += n;
    pruned += k;
    const int64_t zeros = k > 0 ? apply_mask(*l.weight, l.mask, newly) : count_zeros(*l.weight->initializer);
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
      else zeros_total += count_zeros(*w->initializer);
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
