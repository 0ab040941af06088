// Optimizer kernels of the ai.onnx.preview.training domain (opset 1).
//   Adagrad   inputs R, T, X1..Xn, G1..Gn, H1..Hn -> X_new1..n, H_new1..n
//   Adam      inputs R, T, X.., G.., V.., H..     -> X_new.., V_new.., H_new..
//   Momentum  inputs R, T, X.., G.., V..          -> X_new.., V_new.. (mode standard | nesterov)
// dtypes: X/G/V/H f32, f64 (f16/bf16 also accepted); R any float; T i64/i32.
// Accumulation: f64 per element, stored back in each tensor's dtype.
// Not supported: nothing known.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

/// Number of optimised tensors n, checking that inputs = 2 + groups * n and outputs = outs * n.
int64_t tensor_count(const ir::Node& n, size_t num_inputs, int groups) {
  const auto in = static_cast<int64_t>(num_inputs) - 2;
  if (in <= 0 || in % groups != 0)
    throw ModelError(n.describe() + ": expected R, T and " + std::to_string(groups) + " tensors per optimised input, got " +
                     std::to_string(num_inputs) + " inputs");
  return in / groups;
}

void check_same_shape(const ir::Node& n, const ir::Tensor& a, const ir::Tensor& b, const char* what) {
  if (a.dims() != b.dims())
    throw ModelError(n.describe() + ": " + what + " shape " + misc::dims_str(b.dims()) + " differs from X shape " +
                     misc::dims_str(a.dims()));
}

/// Runs f over each of the n optimised tensors with elementwise double views of its inputs;
/// f(k, inputs (X, G, ...), outputs) fills the outputs.
template <class F>
void for_each_group(KernelContext& ctx, int groups, int outs, F&& f) {
  const ir::Node& n = ctx.node();
  const int64_t cnt = tensor_count(n, ctx.num_inputs(), groups);
  for (int64_t k = 0; k < cnt; ++k) {
    std::vector<std::vector<double>> in(static_cast<size_t>(groups));
    const ir::Tensor& x = ctx.in(static_cast<size_t>(2 + k));
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": X", [](auto) {});
    for (int g = 0; g < groups; ++g) {
      const ir::Tensor& t = ctx.in(static_cast<size_t>(2 + g * cnt + k));
      check_same_shape(n, x, t, "input");
      in[g] = misc::read_f64(n, t, "input");
    }
    std::vector<std::vector<double>> out(static_cast<size_t>(outs), std::vector<double>(in[0].size()));
    f(in, out);
    for (int o = 0; o < outs; ++o) {
      const size_t oi = static_cast<size_t>(o * cnt + k);
      if (!ctx.wants_output(oi)) continue;
      // Output o mirrors the dtype of its state input (X for o = 0, then V/H).
      const ir::Tensor& src = ctx.in(static_cast<size_t>(2 + (o == 0 ? 0 : groups - outs + o) * cnt + k));
      ir::Tensor& y = ctx.alloc_output(oi, src.dtype(), x.dims());
      misc::write_f64(n, y, out[o], "output");
    }
  }
}

double rate(KernelContext& ctx) { return misc::scalar_f64(ctx.node(), ctx.in(0), "R"); }
int64_t step(KernelContext& ctx) { return misc::scalar_i64(ctx.node(), ctx.in(1), "T"); }

Kernel make_adagrad(const ir::Node& node) {
  const double decay = node.attr_float("decay_factor", 0.0f);
  const double eps = node.attr_float("epsilon", 1e-6f);
  const double norm = node.attr_float("norm_coefficient", 0.0f);
  return [=](KernelContext& ctx) {
    const double r = rate(ctx) / (1.0 + static_cast<double>(step(ctx)) * decay);
    for_each_group(ctx, 3, 2, [&](const auto& in, auto& out) {
      for (size_t i = 0; i < in[0].size(); ++i) {
        const double x = in[0][i], g = norm * x + in[1][i];
        const double h = in[2][i] + g * g;
        out[0][i] = x - r * g / (std::sqrt(h) + eps);
        out[1][i] = h;
      }
    });
  };
}

Kernel make_adam(const ir::Node& node) {
  const double alpha = node.attr_float("alpha", 0.9f);
  const double beta = node.attr_float("beta", 0.999f);
  const double eps = node.attr_float("epsilon", 1e-6f);
  const double norm = node.attr_float("norm_coefficient", 0.0f);
  const double norm_post = node.attr_float("norm_coefficient_post", 0.0f);
  return [=](KernelContext& ctx) {
    const double r0 = rate(ctx);
    const auto t = static_cast<double>(step(ctx));
    // Bias correction applies from the first step on (T > 0).
    const double r = t > 0 ? r0 * std::sqrt(1.0 - std::pow(beta, t)) / (1.0 - std::pow(alpha, t)) : r0;
    for_each_group(ctx, 4, 3, [&](const auto& in, auto& out) {
      for (size_t i = 0; i < in[0].size(); ++i) {
        const double x = in[0][i], g = norm * x + in[1][i];
        const double v = alpha * in[2][i] + (1 - alpha) * g;
        const double h = beta * in[3][i] + (1 - beta) * g * g;
        out[0][i] = (1 - norm_post) * (x - r * (v / (std::sqrt(h) + eps)));
        out[1][i] = v;
        out[2][i] = h;
      }
    });
  };
}

Kernel make_momentum(const ir::Node& node) {
  for (const char* a : {"alpha", "beta", "norm_coefficient", "mode"})
    if (!node.has_attr(a)) throw ModelError(node.describe() + ": required attribute '" + a + "' is missing");
  const double alpha = node.attr_float("alpha", 0.0f);
  const double beta = node.attr_float("beta", 0.0f);
  const double norm = node.attr_float("norm_coefficient", 0.0f);
  const std::string mode = node.attr_string("mode", "");
  if (mode != "standard" && mode != "nesterov")
    throw ModelError(node.describe() + ": mode must be standard or nesterov, got '" + mode + "'");
  const bool nesterov = mode == "nesterov";
  return [=](KernelContext& ctx) {
    const double r = rate(ctx);
    const double b = step(ctx) > 0 ? beta : 1.0;  // the first step takes the whole gradient
    for_each_group(ctx, 3, 2, [&](const auto& in, auto& out) {
      for (size_t i = 0; i < in[0].size(); ++i) {
        const double x = in[0][i], g = norm * x + in[1][i];
        const double v = alpha * in[2][i] + b * g;
        out[0][i] = nesterov ? x - r * (g + alpha * v) : x - r * v;
        out[1][i] = v;
      }
    });
  };
}

}  // namespace

void register_training(KernelRegistry& r) {
  r.add("Adagrad", 1, 0, make_adagrad, kTrainingDomain);
  r.add("Adam", 1, 0, make_adam, kTrainingDomain);
  r.add("Momentum", 1, 0, make_momentum, kTrainingDomain);
}

}  // namespace mcc::backends::cpu
