// Random-number kernels.
//   RandomNormal, RandomUniform          opset 1, 22 (shape, dtype, mean/scale, low/high, seed)
//   RandomNormalLike, RandomUniformLike  opset 1, 22 (shape of the input; dtype defaults to it)
//   Multinomial                          opset 7, 22 (unnormalised log-probabilities [B, K] ->
//                                        [B, sample_size] class indices, dtype i32 or i64)
//   Bernoulli                            opset 15, 22 (probabilities -> 0/1, dtype attr or input's)
// dtypes: outputs f32, f64, f16, bf16 (Multinomial i32/i64; Bernoulli any numeric or bool);
// inputs f32, f64, f16, bf16. Sampling in f64 from a 64-bit Mersenne Twister.
// Determinism: with the seed attribute, a node's first run always gives the same values; without
// it the engine is seeded from a hash of the node's first output name, so runs are reproducible
// and different nodes draw different streams. Each run advances the node's engine, as repeated
// calls to a seeded generator do. The streams do not match ONNX Runtime's or NumPy's bit for bit.
// Not supported: nothing known.
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

/// A node's engine, shared by its kernel across runs.
struct Rng {
  std::mutex mu;
  std::mt19937_64 eng;
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(eng() >> 11) * 0x1.0p-53; }
  /// Standard normal (Box-Muller).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
};

std::shared_ptr<Rng> make_rng(const ir::Node& n) {
  auto r = std::make_shared<Rng>();
  uint64_t seed;
  if (n.has_attr("seed")) {
    seed = std::bit_cast<uint32_t>(n.attr_float("seed", 0.0f));
  } else {
    const std::string key = !n.outputs.empty() && n.outputs[0] ? n.outputs[0]->name : n.name;
    // FNV-1a: stable across platforms, unlike std::hash.
    seed = 1469598103934665603ull;
    for (char c : key) seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  r->eng.seed(seed);
  return r;
}

ir::DType float_dtype_attr(const ir::Node& n, ir::DType def) {
  const auto dt = static_cast<ir::DType>(n.attr_int("dtype", static_cast<int64_t>(def)));
  if (dt != ir::DType::F32 && dt != ir::DType::F64 && dt != ir::DType::F16 && dt != ir::DType::BF16)
    throw UnsupportedError(n.describe() + ": dtype " + ir::dtype_name(dt) + " not supported; supported: f32, f64, f16, bf16");
  return dt;
}

enum class Dist { Normal, Uniform };

template <Dist D, bool Like>
Kernel make_random(const ir::Node& node) {
  const double p0 = node.attr_float(D == Dist::Normal ? "mean" : "low", 0.0f);
  const double p1 = node.attr_float(D == Dist::Normal ? "scale" : "high", 1.0f);
  std::vector<int64_t> shape;
  if (!Like) {
    if (!node.has_attr("shape")) throw ModelError(node.describe() + ": required attribute 'shape' is missing");
    shape = node.attr_ints("shape");
    ir::checked_numel(shape);
  }
  const bool has_dtype = node.has_attr("dtype");
  const ir::DType fixed = has_dtype || !Like ? float_dtype_attr(node, ir::DType::F32) : ir::DType::Undefined;
  auto rng = make_rng(node);
  return [=](KernelContext& ctx) {
    std::vector<int64_t> dims = shape;
    ir::DType dt = fixed;
    if constexpr (Like) {
      dims = ctx.in(0).dims();
      if (dt == ir::DType::Undefined) dt = float_dtype_attr(ctx.node(), ctx.in(0).dtype());
    }
    std::vector<double> v(static_cast<size_t>(ir::checked_numel(dims)));
    {
      std::lock_guard<std::mutex> lock(rng->mu);
      for (double& x : v) x = D == Dist::Normal ? p0 + p1 * rng->normal() : p0 + (p1 - p0) * rng->uniform();
    }
    ir::Tensor& y = ctx.alloc_output(0, dt, dims);
    misc::write_f64(ctx.node(), y, v, "output");
  };
}

Kernel make_multinomial(const ir::Node& node) {
  const int64_t samples = node.attr_int("sample_size", 1);
  if (samples < 0) throw ModelError(node.describe() + ": sample_size must be >= 0");
  const auto dt = static_cast<ir::DType>(node.attr_int("dtype", 6));
  if (dt != ir::DType::I32 && dt != ir::DType::I64)
    throw UnsupportedError(node.describe() + ": dtype " + ir::dtype_name(dt) + " not supported; supported: i32, i64");
  auto rng = make_rng(node);
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": input", [](auto) {});
    if (x.rank() != 2) throw ModelError(n.describe() + ": input must be [batch, classes], got " + misc::dims_str(x.dims()));
    const int64_t B = x.dims()[0], K = x.dims()[1];
    if (K == 0) throw ModelError(n.describe() + ": input has no classes");
    const std::vector<double> lp = misc::read_f64(n, x, "input");
    std::vector<double> out(static_cast<size_t>(B * samples)), cdf(static_cast<size_t>(K));
    std::lock_guard<std::mutex> lock(rng->mu);
    for (int64_t b = 0; b < B; ++b) {
      double mx = -INFINITY;
      for (int64_t k = 0; k < K; ++k) mx = std::max(mx, lp[b * K + k]);
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k) cdf[k] = (s += std::exp(lp[b * K + k] - mx));
      for (int64_t i = 0; i < samples; ++i) {
        const double u = rng->uniform() * s;
        int64_t k = 0;
        while (k < K - 1 && cdf[k] <= u) ++k;
        out[b * samples + i] = static_cast<double>(k);
      }
    }
    ir::Tensor& y = ctx.alloc_output(0, dt, {B, samples});
    misc::write_f64(n, y, out, "output");
  };
}

Kernel make_bernoulli(const ir::Node& node) {
  const bool has_dtype = node.has_attr("dtype");
  const auto attr_dt = static_cast<ir::DType>(node.attr_int("dtype", 0));
  if (has_dtype && (!ir::info(attr_dt).computable || attr_dt == ir::DType::String))
    throw UnsupportedError(node.describe() + ": dtype " + ir::dtype_name(attr_dt) + " not supported");
  auto rng = make_rng(node);
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": input", [](auto) {});
    const std::vector<double> p = misc::read_f64(n, x, "input");
    std::vector<double> out(p.size());
    {
      std::lock_guard<std::mutex> lock(rng->mu);
      for (size_t i = 0; i < p.size(); ++i) out[i] = rng->uniform() < p[i] ? 1.0 : 0.0;
    }
    ir::Tensor& y = ctx.alloc_output(0, has_dtype ? attr_dt : x.dtype(), x.dims());
    misc::write_f64(n, y, out, "output");
  };
}

}  // namespace

void register_random(KernelRegistry& r) {
  r.add("RandomNormal", 1, 0, make_random<Dist::Normal, false>);
  r.add("RandomUniform", 1, 0, make_random<Dist::Uniform, false>);
  r.add("RandomNormalLike", 1, 0, make_random<Dist::Normal, true>);
  r.add("RandomUniformLike", 1, 0, make_random<Dist::Uniform, true>);
  r.add("Multinomial", 7, 0, make_multinomial);
  r.add("Bernoulli", 15, 0, make_bernoulli);
}

}  // namespace mcc::backends::cpu
