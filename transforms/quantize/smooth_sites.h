// Where a per-input-channel scale s can move between an activation X and the weights of the
// MatMul/Gemm layers reading it without changing the float model: X' = X / s, W'[j, :] = s[j] W[j, :],
// so X' W' = X W. Shared by SmoothQuant (quantize/smooth.h, which picks s for int8 activations) and
// AWQ (quantize/awq.h, which picks s for low-bit weights). A site is one of:
//   - a LayerNormalization output: 1/s goes into its gamma and beta; readers that stay float get a
//     copy of the LayerNormalization with the original gamma and beta (`float_copy`);
//   - with fold_const_mul, a Mul by a float32 constant of the channels' length (the gamma of an
//     RMSNorm written as Pow/ReduceMean/Sqrt/Div/Mul) whose output only quantized layers read:
//     1/s goes into that constant (`scaled_mul`), no node added;
//   - any other activation: a Mul by 1/s is inserted before the first reader (`mul`); its output
//     takes X's name and X becomes '<x>_unsmoothed', still read by readers that stay float.
// A constant, gamma or beta shared with other nodes is copied first (copy-on-write, `copied`).
// Does not apply to: LayerNormalizations over more than the last axis, with a non-constant scale
// or bias, whose output is a graph output or is read inside a subgraph; activations that are graph
// inputs or outputs; readers that are not quantized MatMul/Gemm nodes taking X as input A with a
// float32 constant [K, N] weight (Gemm without transA; [N, K] with transB); weights read by a node
// outside the site or read both ways. Each refusal is listed in `skipped` with its reason.
// Replay (replay_scale_sites) applies recorded scales with no data; a record that does not fit the
// model is a ModelError.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

/// One activation whose channels can be rescaled into its readers' weights.
struct ScaleSite {
  ir::Node* ln = nullptr;                // a LayerNormalization producing x (its gamma/beta take 1/s)
  ir::Node* const_mul = nullptr;         // a Mul by a constant vector producing x (the constant takes 1/s)
  int const_index = -1;                  // const_mul's input holding the constant
  ir::Value* x = nullptr;                // the rescaled activation
  std::vector<ir::Node*> readers;        // quantized MatMul/Gemm: their weights take the scales
  std::vector<ir::Node*> float_readers;  // other readers: they keep the unscaled value
  int64_t channels = 0;
};

/// Whether a reader's weight is stored [N, K] (Gemm with transB): channel j is column j.
inline bool transposed_weight(const ir::Node& reader) {
  return reader.op_type == "Gemm" && reader.attr_int("transB", 0) != 0;
}

/// The LayerNormalization sites among `sel`'s readers; refusals go to `skipped`.
std::vector<ScaleSite> find_layer_norm_sites(ir::Model& model, const Selection& sel, nlohmann::ordered_json& skipped);

/// The quantized MatMul/Gemm inputs no LayerNormalization produces; with fold_const_mul, those a
/// Mul by a constant vector produces (and only quantized layers read) fold into that constant.
std::vector<ScaleSite> find_activation_sites(ir::Model& model, const Selection& sel, nlohmann::ordered_json& skipped,
                                             bool fold_const_mul);

/// Lists site `s` as left alone with `why`, under its LayerNormalization or its activation.
void skip_site(nlohmann::ordered_json& skipped, const ScaleSite& s, const std::string& why);

/// Calls f(index, j, n, w) for every element of every distinct reader weight of `s`: index counts
/// the distinct weights from 0, j is the element's input channel and n its output column.
template <class F>
void for_each_weight(const ScaleSite& s, F&& f) {
  std::set<const ir::Value*> seen;
  for (const ir::Node* r : s.readers) {
    if (!seen.insert(r->input(1)).second) continue;
    const ir::Tensor& w = *r->input(1)->initializer;
    const auto v = w.data<float>();
    const size_t rows = static_cast<size_t>(w.dims()[0]), cols = static_cast<size_t>(w.dims()[1]);
    const bool t = transposed_weight(*r);
    for (size_t i = 0; i < rows; ++i)
      for (size_t k = 0; k < cols; ++k) f(seen.size() - 1, t ? k : i, t ? i : k, v[i * cols + k]);
  }
}

/// The start of a site's record: {"layer_norm": label} or {"activation": name}.
nlohmann::ordered_json site_record(const ScaleSite& s);

/// Node labels of `nodes`, as a JSON array.
nlohmann::ordered_json node_labels(const std::vector<ir::Node*>& nodes);

/// Applies `scales` at site `s` and appends how to `layer` (float_copy and copied, mul or
/// scaled_mul and copied). replay_scale_sites reads a layer holding site_record's key, "readers",
/// "float_readers" (LayerNormalization sites), "scales" and these.
void apply_scale_site(ir::Graph& g, const ScaleSite& s, const std::vector<float>& scales, nlohmann::ordered_json& layer);

struct ReplayedSites {
  int64_t layers = 0, muls = 0, scaled_muls = 0, readers = 0, float_copies = 0;
};

/// Applies a record's sites (its "layers", as apply_scale_site wrote them) with no data; `what` names
/// the record in errors ("smooth_quant", "awq"). ModelError when one does not fit the model.
ReplayedSites replay_scale_sites(ir::Model& model, const nlohmann::ordered_json& rec, const std::string& what);

}  // namespace mcc::transforms::quantize
