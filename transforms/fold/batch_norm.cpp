// fold_batch_norm: fold an inference-mode BatchNormalization into the preceding Conv,
// ConvTranspose, Gemm or MatMul.
//
// Before:  y = BatchNormalization(Conv(x, W, B?), s, b, m, v)
// After:   y = Conv(x, W', B')                       (y keeps its name)
//   k[c]  = s[c] / sqrt(v[c] + eps)
//   W'    = W * k[c] along the output channel c      (Conv: W axis 0; ConvTranspose: W axis 1 x
//                                                      group; Gemm: B's N axis, respecting
//                                                      transB; MatMul: B axis 1)
//   B'[c] = (B[c] - m[c]) * k[c] + b[c]              (B = 0 when absent; Gemm: beta*C)
// MatMul has no bias slot: y = Add(MatMul(x, W'), B') (same node count, no BatchNormalization).
// Does not apply when: training_mode=1 (opset 14+) or is_test=0 (opset < 7) or spatial=0; the
//   BN's extra outputs (running/saved mean and var) are used; the producer's output has another
//   consumer or is a graph output; the producer's weight is shared with another node; any of
//   W, B, s, b, m, v is not a constant; the parameters are not per-channel vectors of the
//   producer's output-channel count; dtypes are not float; MatMul's input is not known to be
//   rank 2 (the BN channel axis 1 must be MatMul's last axis); Gemm before opset 7.
// Numerical notes: computed in f64 from the stored values, rounded once to the weight's dtype;
//   results differ from the unfused model only by that rounding (well inside fp32 tolerance).
#include <algorithm>
#include <cmath>
#include <string>

#include <spdlog/spdlog.h>

#include "ir/op_attrs.h"
#include "transforms/fold/fold.h"
#include "transforms/common/weight_fold.h"

namespace mcc::transforms::fold {
namespace {

bool bn_is_inference(const ir::Node& bn) {
  const ir::BatchNormAttrs a(bn);
  if (bn.since_version < 7 && !a.is_test()) return false;
  if (a.per_activation() || a.training_mode()) return false;
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (bn.outputs[i] && (!bn.outputs[i]->uses.empty() || is_any_graph_output(*bn.outputs[i]))) return false;
  return true;
}

bool try_fold(ir::Graph& g, ir::Node& bn, RewriteLog& log) {
  if (!bn_is_inference(bn) || bn.num_inputs() < 5 || !bn.outputs[0]) return false;
  ir::Value* x = bn.inputs[0];
  ir::Node* op = producer_in(g, x, {"Conv", "ConvTranspose", "Gemm", "MatMul"});
  if (!op || !has_single_use(*x) || op->outputs.size() < 1 || op->outputs[0] != x) return false;
  for (int i = 1; i < 5; ++i)
    if (!is_constant(bn.inputs[static_cast<size_t>(i)]) || !is_float(bn.inputs[static_cast<size_t>(i)]->initializer->dtype()))
      return false;
  ir::Value* w = op->input(1);
  if (!is_constant(w) || !is_float(w->initializer->dtype()) || w->uses.size() != 1) return false;
  if (op->is("Gemm") && op->since_version < 7) return false;
  if (op->is("MatMul")) {
    const ir::Value* a = op->input(0);
    if (!a || !a->shape.rank_known() || a->shape.rank() != 2) return false;
  }
  auto channels = output_channels(*op, *w->initializer);
  if (!channels) return false;
  auto bias = effective_bias(*op, *channels);
  if (!bias) return false;
  std::vector<std::vector<double>> p;
  for (int i = 1; i < 5; ++i) {
    const ir::Tensor& t = *bn.inputs[static_cast<size_t>(i)]->initializer;
    if (t.numel() != *channels) return false;
    p.push_back(to_f64(t));
  }
  const double eps = ir::BatchNormAttrs(bn).epsilon();
  std::vector<double> k(static_cast<size_t>(*channels)), d(k.size());
  for (size_t c = 0; c < k.size(); ++c) {
    k[c] = p[0][c] / std::sqrt(p[3][c] + eps);
    d[c] = p[1][c] - p[2][c] * k[c];
  }
  const std::string bn_name = bn.name.empty() ? bn.outputs[0]->name : bn.name;
  const ir::DType dt = w->initializer->dtype();
  std::vector<ir::Value*> params;
  for (size_t i = 1; i < 5; ++i)
    if (std::find(params.begin(), params.end(), bn.inputs[i]) == params.end()) params.push_back(bn.inputs[i]);
  fold_affine_into(g, *op, k, d);
  if (op->is("MatMul")) {
    // y = Add(MatMul(x, W'), d): the Add takes over the BN's output.
    ir::Value& bias_v = g.add_initializer(g.unique_name(bn_name + "_bias"), from_f64(dt, {*channels}, d));
    ir::Value* y = bn.outputs[0];
    ir::Value& tmp = g.add_value(g.unique_name(y->name + "_add"));
    ir::Node& add = g.add_node_with_outputs("Add", op->domain, g.unique_name(bn_name + "_add"), {x, &bias_v}, {&tmp}, &bn);
    add.since_version = op->since_version;
    take_over_output(g, bn, *y, tmp);
  } else {
    take_over_output(g, bn, *bn.outputs[0], *x);
  }
  for (ir::Value* v : params) drop_if_unused(v);  // BN's parameters, unless shared
  log.add("batch_norms_folded", bn_name + " -> " + op->name);
  return true;
}

}  // namespace

int64_t fold_batch_norm(ir::Model& m, const FoldConfig& cfg, RewriteLog& log) {
  return RewriteDriver().on({"BatchNormalization"}, try_fold).recurse_subgraphs(cfg.subgraphs).run(*m.graph, log);
}

}  // namespace mcc::transforms::fold
