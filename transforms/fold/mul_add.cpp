// fold_mul_add: fold a Mul/Div/Add/Sub by a per-output-channel (or scalar) constant that follows
// a Conv, ConvTranspose or Gemm into the producer's weight and bias.
//
// Before:  y = Mul(Conv(x, W, B), c)        y = Add(Gemm(a, W, C), c)
// After:   y = Conv(x, W', B')              y = Gemm(a, W, C')          (y keeps its name)
//   Mul:  W' = W * c[ch],  B' = B * c[ch]     Div (x / c): the same with 1 / c
//   Add:  B' = B + c[ch]                      Sub (x - c): B' = B - c[ch]
// c broadcasts against the producer's output [N, C, ...] (Gemm: [M, N]) only along the channel
// axis 1: right-aligned, every other dim of c is 1 and c has no more dims than the output.
// Does not apply when: c is not a float constant of the output's dtype; c varies along any other
//   axis or would grow the output by broadcasting; the producer's output has another consumer or
//   is a graph output; the weight is not constant or is shared; the bias is not a constant
//   per-channel vector; c - x (the constant first in Sub) or c / x; Div by a c with a zero;
//   Gemm before opset 7.
// Numerical notes: computed in f64, rounded once to the weight's dtype. (x*W)*c and x*(W*c)
//   differ by one rounding per product: within fp32 tolerance, not bit-exact.
#include <string>

#include "transforms/fold/fold.h"
#include "transforms/common/weight_fold.h"

namespace mcc::transforms::fold {
namespace {

// Rank of the producer's output, when known from its weight.
int64_t output_rank(const ir::Node& op, const ir::Tensor& w) {
  return op.is("Gemm") ? 2 : static_cast<int64_t>(w.rank());
}

// c as a per-channel vector of `channels` values, or nullopt when it is not per-channel.
std::optional<std::vector<double>> per_channel(const ir::Tensor& c, int64_t rank, int64_t channels) {
  const auto& d = c.dims();
  if (static_cast<int64_t>(d.size()) > rank) return std::nullopt;
  const int64_t axis_from_right = rank - 1 - kOutputChannelAxis;  // position of the channel axis, from the right
  bool along_channel = false;
  for (size_t i = 0; i < d.size(); ++i) {
    const int64_t from_right = static_cast<int64_t>(d.size() - 1 - i);
    if (d[i] == 1) continue;
    if (from_right == axis_from_right && d[i] == channels) { along_channel = true; continue; }
    return std::nullopt;
  }
  const std::vector<double> v = to_f64(c);
  if (!along_channel) return std::vector<double>(static_cast<size_t>(channels), v.at(0));
  return v;
}

bool try_fold(ir::Graph& g, ir::Node& n, RewriteLog& log) {
  if (n.num_inputs() != 2 || n.outputs.size() != 1 || !n.outputs[0]) return false;
  const bool commutative = n.is("Mul") || n.is("Add");
  int xi = -1;
  for (int i = 0; i < 2; ++i) {
    if (!commutative && i == 1) break;  // Sub/Div: only x - c and x / c
    ir::Node* p = producer_in(g, n.inputs[static_cast<size_t>(i)], {"Conv", "ConvTranspose", "Gemm"});
    if (p && is_constant(n.inputs[static_cast<size_t>(1 - i)])) { xi = i; break; }
  }
  if (xi < 0) return false;
  ir::Value* x = n.inputs[static_cast<size_t>(xi)];
  ir::Value* cv = n.inputs[static_cast<size_t>(1 - xi)];
  ir::Node* op = x->producer;
  if (!has_single_use(*x) || op->outputs[0] != x) return false;
  ir::Value* w = op->input(1);
  if (!is_constant(w) || !is_float(w->initializer->dtype()) || w->uses.size() != 1) return false;
  if (op->is("Gemm") && op->since_version < 7) return false;
  const ir::Tensor& c = *cv->initializer;
  if (!is_float(c.dtype()) || c.dtype() != w->initializer->dtype() || c.numel() == 0) return false;
  auto channels = output_channels(*op, *w->initializer);
  if (!channels || !effective_bias(*op, *channels)) return false;
  auto cc = per_channel(c, output_rank(*op, *w->initializer), *channels);
  if (!cc) return false;
  std::vector<double> k(cc->size(), 1.0), d(cc->size(), 0.0);
  for (size_t i = 0; i < cc->size(); ++i) {
    const double v = (*cc)[i];
    if (n.is("Mul")) k[i] = v;
    else if (n.is("Div")) { if (v == 0.0) return false; k[i] = 1.0 / v; }
    else if (n.is("Add")) d[i] = v;
    else d[i] = -v;
  }
  const std::string name = n.name.empty() ? n.outputs[0]->name : n.name;
  fold_affine_into(g, *op, k, d);
  take_over_output(g, n, *n.outputs[0], *x);
  drop_if_unused(cv);
  log.add("mul_add_folded", name + " -> " + op->name);
  return true;
}

}  // namespace

int64_t fold_mul_add(ir::Model& m, const FoldConfig& cfg, RewriteLog& log) {
  return RewriteDriver().on({"Mul", "Div", "Add", "Sub"}, try_fold).recurse_subgraphs(cfg.subgraphs).run(*m.graph, log);
}

}  // namespace mcc::transforms::fold
