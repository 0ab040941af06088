// ConvInteger (opset 10) and QLinearConv (opset 10): the Conv geometry of conv.cpp (groups,
// strides, dilations, pads, auto_pad) on u8/i8 inputs and weights.
// Zero points: x per-tensor; w per-tensor or per output channel. Accumulation in int32 (the
// operands are centred on their zero points first, so padding contributes 0, i.e. pads hold the
// zero point). ConvInteger outputs int32. QLinearConv adds the int32 bias, scales by
// x_scale * w_scale / y_scale (w_scale per-tensor or per output channel, f32 scale math, product in
// f64), rounds half to even, adds y_zero_point and saturates to the output's u8/i8 range.
// Not supported: more than 3 spatial dims.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/nn_register.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cpu {

namespace {

using ir::DType;

std::vector<int32_t> ints_of(const ir::Node& n, const ir::Tensor& t, const char* what) {
  std::vector<int32_t> v;
  v.reserve(static_cast<size_t>(t.numel()));
  ir::dispatch<DType::U8, DType::I8>(t.dtype(), n.describe() + ": " + what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T x : t.data<T>()) v.push_back(x);
  });
  return v;
}

// x - x_zero_point (per-tensor) as int32.
std::vector<int32_t> centred_x(const ir::Node& n, const ir::Tensor& x, const ir::Tensor* zp) {
  auto v = ints_of(n, x, "x");
  if (zp) {
    if (zp->dtype() != x.dtype())
      throw ModelError(n.describe() + ": x_zero_point must have x's dtype");
    const auto z = ints_of(n, *zp, "x_zero_point");
    if (z.size() != 1)
      throw ModelError(n.describe() + ": x_zero_point must be a scalar (per-tensor)");
    for (auto& e : v) e -= z[0];
  }
  return v;
}

// w - w_zero_point (per-tensor or per output channel) as int32.
std::vector<int32_t> centred_w(const ir::Node& n, const ir::Tensor& w, const ir::Tensor* zp) {
  auto v = ints_of(n, w, "w");
  if (zp) {
    if (zp->dtype() != w.dtype())
      throw ModelError(n.describe() + ": w_zero_point must have w's dtype");
    const auto z = ints_of(n, *zp, "w_zero_point");
    const int64_t m = w.dims()[0], per = m ? w.numel() / m : 0;
    if (z.size() == 1) {
      for (auto& e : v) e -= z[0];
    } else if (static_cast<int64_t>(z.size()) == m) {
      for (int64_t i = 0; i < w.numel(); ++i)
        v[static_cast<size_t>(i)] -= z[static_cast<size_t>(i / per)];
    } else {
      throw ModelError(n.describe() +
                       ": w_zero_point must be a scalar or have one value per output channel");
    }
  }
  return v;
}

struct ConvIntAttrs {
  WindowAttrs w;
  int64_t group = 1;
};

ConvIntAttrs parse(const ir::Node& n) {
  ConvIntAttrs a;
  a.w = WindowAttrs::parse(n);
  a.group = ir::ConvAttrs(n).group();
  return a;
}

Kernel make_conv_integer(const ir::Node& node) {
  const ConvIntAttrs a = parse(node);
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const ir::Tensor& w = ctx.in(1);
    if (w.rank() < 1) throw ModelError(n.describe() + ": w must have rank >= 3");
    const ConvProblem p = conv_problem(n, a.w, a.group, x.dims(), w.dims());
    const auto xv = centred_x(n, x, ctx.has_input(2) ? &ctx.in(2) : nullptr);
    const auto wv = centred_w(n, w, ctx.has_input(3) ? &ctx.in(3) : nullptr);
    ir::Tensor& y = ctx.alloc_output(0, DType::I32, p.g.out_dims(p.n, p.m));
    conv_run<int32_t>(ctx, p, xv.data(), wv.data(), nullptr, y.mutable_data<int32_t>().data());
  };
}

Kernel make_qlinear_conv(const ir::Node& node) {
  const ConvIntAttrs a = parse(node);
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const ir::Tensor& w = ctx.in(3);
    if (w.rank() < 1) throw ModelError(n.describe() + ": w must have rank >= 3");
    const ConvProblem p = conv_problem(n, a.w, a.group, x.dims(), w.dims());
    const auto xv = centred_x(n, x, &ctx.in(2));
    const auto wv = centred_w(n, w, &ctx.in(5));
    const auto xs = read_float_tensor(n, ctx.in(1), "x_scale");
    const auto ws = read_float_tensor(n, ctx.in(4), "w_scale");
    const auto ys = read_float_tensor(n, ctx.in(6), "y_scale");
    if (xs.size() != 1 || ys.size() != 1)
      throw ModelError(n.describe() + ": x_scale and y_scale must be scalars");
    if (ws.size() != 1 && static_cast<int64_t>(ws.size()) != p.m)
      throw ModelError(n.describe() +
                       ": w_scale must be a scalar or have one value per output channel");
    std::vector<int32_t> bias;
    if (ctx.has_input(8)) {
      const ir::Tensor& b = ctx.in(8);
      if (b.dtype() != DType::I32 || b.numel() != p.m)
        throw ModelError(n.describe() + ": B must be int32 with one value per output channel");
      auto d = b.data<int32_t>();
      bias.assign(d.begin(), d.end());
    }
    const ir::Tensor& yzp_t = ctx.in(7);
    std::vector<int32_t> acc(static_cast<size_t>(p.n * p.m * p.g.out_size()));
    conv_run<int32_t>(ctx, p, xv.data(), wv.data(), bias.empty() ? nullptr : bias.data(),
                      acc.data());
    ir::Tensor& y = ctx.alloc_output(0, yzp_t.dtype(), p.g.out_dims(p.n, p.m));
    ir::dispatch<DType::U8, DType::I8>(
        yzp_t.dtype(), n.describe() + ": QLinearConv output", [&](auto tag) {
          using T = typename decltype(tag)::type;
          auto z = yzp_t.data<T>();
          if (z.size() != 1) throw ModelError(n.describe() + ": y_zero_point must be a scalar");
          const double yzp = z[0], lo = std::numeric_limits<T>::min(),
                       hi = std::numeric_limits<T>::max();
          const int64_t P = p.g.out_size();
          auto out = y.mutable_data<T>();
          for (size_t i = 0; i < acc.size(); ++i) {
            const int64_t m = (static_cast<int64_t>(i) / P) % p.m;
            const float scale = xs[0] * ws[ws.size() == 1 ? 0 : static_cast<size_t>(m)] / ys[0];
            const double v =
                std::nearbyint(std::clamp(static_cast<double>(acc[i]) * scale + yzp, lo, hi));
            out[i] = static_cast<T>(v);
          }
        });
  };
}

}  // namespace

void register_conv_integer(KernelRegistry& r) {
  r.add("ConvInteger", 10, 0, make_conv_integer);
  r.add("QLinearConv", 10, 0, make_qlinear_conv);
}

}  // namespace mcc::backends::cpu
