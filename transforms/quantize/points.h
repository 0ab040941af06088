// Point building for the quantize stage: from a choice of quantized activations and their
// ranges, every quantization point of the plan: activations (a shared-scale group takes the union
// of its members' ranges), weights (symmetric int8 from the float32 constant, per output channel
// or per tensor) and biases (quantize/bias.h). Used for the final plan and, on copies, by the
// measured sensitivity search. Does not apply to weights that are graph inputs or outputs, or
// shared by nodes quantized differently or not at all: those stay float32 and are listed.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

struct Points {
  std::vector<QPoint> points;                 // application order: activations, then weights and biases
  std::map<std::string, size_t> activation;   // tensor -> index in points
  std::map<std::string, size_t> weight;       // tensor -> index in points
  int64_t weights = 0, biases = 0;
  int64_t embeddings = 0;                     // mode=dynamic embeddings=true: Gather tables stored as int8
  int64_t float_inputs = 0;                   // mode=dynamic: layers keeping a float input (GELU outputs), int8 weights
  int64_t guarded = 0;                        // bias overflow guards: weight scales widened
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();  // {tensor, reason}: kept float32
};

/// The points for activations `use[i]` of sel.activations with ranges `range[i]`, and for the
/// weights and biases of sel.nodes.
Points build_points(const ir::Model& model, const Selection& sel, const Config& cfg, const std::vector<bool>& use,
                    const std::vector<std::pair<double, double>>& range);

/// Symmetric int8 point of float32 constant `w`: s[c] = max|W[c]| / 127 per channel along `axis`
/// (-1: one scale), zero points 0, the observed ranges, method minmax.
QPoint weight_point(const ir::Value& w, int axis);

/// Why weight `w`, quantized along `axis` for the candidates `users` that read it, stays float32
/// ("" when it is quantized): every use must be the weight slot of a user with the same axis, and
/// it must be no graph output nor (from IR 4, `ir3` false) graph input.
std::string weight_refusal(const ir::Graph& g, bool ir3, const ir::Value* w, int axis,
                           const std::vector<const Candidate*>& users);

/// Keeps in `kept` the candidates whose weight (input 1) every reader quantizes alike
/// (weight_refusal with each candidate's `axis_of`), repeating until no reader is dropped (a
/// dropped reader makes its weight's other readers float too); each dropped candidate goes to
/// sel.skipped with the weight's reason. Used by the modes that rewrite MatMul/Gemm weights.
void keep_candidates_with_consistent_weights(const ir::Model& model, Selection& sel, std::vector<Candidate>& kept,
                                             int (*axis_of)(const Candidate&));

/// Whether `v` is one of g's outputs.
bool is_graph_output(const ir::Graph& g, const ir::Value* v);

}  // namespace mcc::transforms::quantize
