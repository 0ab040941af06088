// Loss kernels.
//   NegativeLogLikelihoodLoss  opset 12, 13, 22
//   SoftmaxCrossEntropyLoss    opset 12, 13 (optional second output log_prob)
// dtypes: input/scores f32, f64, f16, bf16; target/labels i32, i64; weight same dtype as input.
// Accumulation: f64 (log-softmax, sums and the weighted mean), stored back in the input dtype.
// Semantics: input [N, C, d1..dk], target [N, d1..dk]; reduction none/sum/mean, where mean is
// sum(w[t]*loss) / sum(w[t]) over the elements not equal to ignore_index (w = 1 without
// weights). ignore_index may be negative or outside [0, C). A target outside [0, C) that is not
// ignore_index is a ModelError.
// Not supported: nothing known.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

enum class Reduction { None, Sum, Mean };

struct LossAttrs {
  Reduction reduction = Reduction::Mean;
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

LossAttrs parse_loss_attrs(const ir::Node& n) {
  LossAttrs a;
  const std::string red = n.attr_string("reduction", "mean");
  if (red == "none") a.reduction = Reduction::None;
  else if (red == "sum") a.reduction = Reduction::Sum;
  else if (red == "mean") a.reduction = Reduction::Mean;
  else throw ModelError(n.describe() + ": reduction must be none, sum or mean, got '" + red + "'");
  a.has_ignore = n.has_attr("ignore_index");
  if (a.has_ignore) a.ignore_index = n.attr_int("ignore_index", 0);
  return a;
}

/// Shared tail of both losses: given per-(n, c, d) log-probabilities `logp` laid out as
/// [N, C, D], computes the loss over target [N, D] and writes output 0.
void compute_nll(KernelContext& ctx, const LossAttrs& a, const std::vector<double>& logp,
                 int64_t N, int64_t C, int64_t D, const std::vector<int64_t>& out_dims,
                 ir::DType dt) {
  const ir::Node& n = ctx.node();
  const std::vector<int64_t> target = read_int_tensor(n, ctx.in(1), "target");
  if (static_cast<int64_t>(target.size()) != N * D)
    throw ModelError(n.describe() + ": target has " + std::to_string(target.size()) +
                     " elements, expected " + std::to_string(N * D) + " (input dims without C)");
  std::vector<double> weight;
  if (ctx.has_input(2)) {
    weight = misc::read_f64(n, ctx.in(2), "weight");
    if (static_cast<int64_t>(weight.size()) != C)
      throw ModelError(n.describe() + ": weight must have C=" + std::to_string(C) + " elements, got " +
                       std::to_string(weight.size()));
  }
  std::vector<double> loss(static_cast<size_t>(N * D), 0.0);
  double wsum = 0.0, lsum = 0.0;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t t = target[i * D + d];
      if (a.has_ignore && t == a.ignore_index) continue;
      if (t < 0 || t >= C)
        throw ModelError(n.describe() + ": target value " + std::to_string(t) + " is outside [0, " +
                         std::to_string(C) + ")");
      const double w = weight.empty() ? 1.0 : weight[t];
      const double l = -logp[(i * C + t) * D + d] * w;
      loss[i * D + d] = l;
      lsum += l;
      wsum += w;
    }
  if (a.reduction == Reduction::None) {
    ir::Tensor& y = ctx.alloc_output(0, dt, out_dims);
    misc::write_f64(n, y, loss, "loss");
    return;
  }
  double r = lsum;
  if (a.reduction == Reduction::Mean)
    r = lsum / wsum;  // 0/0 (everything ignored) is NaN, as in PyTorch and the ONNX reference
  ir::Tensor& y = ctx.alloc_output(0, dt, {});
  misc::write_f64(n, y, {r}, "loss");
}

void check_input_rank(const ir::Node& n, const ir::Tensor& x) {
  if (x.rank() < 2)
    throw ModelError(n.describe() + ": input must have rank >= 2 ([N, C, ...]), got " +
                     misc::dims_str(x.dims()));
}

Kernel make_nll(const ir::Node& node) {
  const LossAttrs a = parse_loss_attrs(node);
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    check_input_rank(n, x);
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": input", [](auto) {});
    const int64_t N = x.dims()[0], C = x.dims()[1];
    const int64_t D = C == 0 || N == 0 ? 0 : x.numel() / (N * C);
    std::vector<int64_t> out_dims = x.dims();
    out_dims.erase(out_dims.begin() + 1);
    compute_nll(ctx, a, misc::read_f64(n, x, "input"), N, C, D, out_dims, x.dtype());
  };
}

Kernel make_sce(const ir::Node& node) {
  const LossAttrs a = parse_loss_attrs(node);
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    check_input_rank(n, x);
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": scores", [](auto) {});
    const int64_t N = x.dims()[0], C = x.dims()[1];
    const int64_t D = C == 0 || N == 0 ? 0 : x.numel() / (N * C);
    std::vector<double> v = misc::read_f64(n, x, "scores");
    // Log-softmax over C for every (n, d), in place.
    for (int64_t i = 0; i < N; ++i)
      for (int64_t d = 0; d < D; ++d) {
        double* base = v.data() + i * C * D + d;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < C; ++c) mx = std::max(mx, base[c * D]);
        double s = 0.0;
        for (int64_t c = 0; c < C; ++c) s += std::exp(base[c * D] - mx);
        const double lse = mx + std::log(s);
        for (int64_t c = 0; c < C; ++c) base[c * D] -= lse;
      }
    std::vector<int64_t> out_dims = x.dims();
    out_dims.erase(out_dims.begin() + 1);
    compute_nll(ctx, a, v, N, C, D, out_dims, x.dtype());
    if (ctx.wants_output(1)) {
      ir::Tensor& lp = ctx.alloc_output(1, x.dtype(), x.dims());
      misc::write_f64(n, lp, v, "log_prob");
    }
  };
}

}  // namespace

void register_loss(KernelRegistry& r) {
  r.add("NegativeLogLikelihoodLoss", 12, 0, make_nll);
  r.add("SoftmaxCrossEntropyLoss", 12, 0, make_sce);
}

}  // namespace mcc::backends::cpu
