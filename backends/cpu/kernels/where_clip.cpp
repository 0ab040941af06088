// Where (three-way numpy broadcasting select) and Clip.
//
// ONNX ops (domain ai.onnx): Where (9, 16); Clip 1-10 (min/max attributes, defaults the lowest
// and highest float) and 11+ (optional scalar min/max inputs; an omitted bound is unbounded).
// When min > max every output is max (ONNX spec: y = min(max(x, lo), hi)).
//
// dtypes: Where: X/Y any of f32, f64, f16, bf16, integer types, bool, string (cond bool);
// Clip: f32, f64, f16, bf16 and every integer type. Accumulation: none; f16/bf16 compare in f32.
// NaN inputs of Clip stay NaN.
#include <algorithm>
#include <limits>
#include <string>

#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/kernels/half_convert.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;
using ir::Tensor;
using ew::compute_t;

KernelFactory where_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) {
      const Tensor& c = ctx.in(0);
      const Tensor& x = ctx.in(1);
      const Tensor& y = ctx.in(2);
      if (c.dtype() != DType::Bool)
        throw ModelError(ctx.node().describe() + ": condition must be bool, got " + ir::dtype_name(c.dtype()));
      if (x.dtype() != y.dtype())
        throw ModelError(ctx.node().describe() + ": X and Y have different dtypes " + ir::dtype_name(x.dtype()) +
                         " and " + ir::dtype_name(y.dtype()));
      const auto out = broadcast_shapes(ctx.node(), broadcast_shapes(ctx.node(), c.dims(), x.dims()), y.dims());
      const auto plan = ew::make_plan(out, {&c.dims(), &x.dims(), &y.dims()});
      Tensor& o = ctx.alloc_output(0, x.dtype(), out);
      const bool* pc = c.data<bool>().data();
      if (x.dtype() == DType::String) {
        std::vector<std::string>& dst = o.mutable_strings();
        ew::run_ternary(ctx, plan, pc, x.strings().data(), y.strings().data(), dst.data(),
                        [](bool s, const std::string& a, const std::string& b) { return s ? a : b; });
        return;
      }
      ir::dispatch<MCC_ALL_DTYPES>(x.dtype(), what, [&](auto tag) {
        using T = typename decltype(tag)::type;
        ew::run_ternary(ctx, plan, pc, x.data<T>().data(), y.data<T>().data(), o.mutable_data<T>().data(),
                        [](bool s, T a, T b) { return s ? a : b; });
      });
    };
  };
}

/// Reads an optional scalar bound input as T; false when omitted.
template <class T>
bool read_bound(const KernelContext& ctx, size_t i, T& v) {
  if (!ctx.has_input(i)) return false;
  const Tensor& t = ctx.in(i);
  if (t.numel() == 0) return false;  // an empty tensor is treated as "no bound"
  if (t.numel() != 1)
    throw ModelError(ctx.node().describe() + ": Clip " + (i == 1 ? "min" : "max") + " must be a scalar, got " +
                     std::to_string(t.numel()) + " elements");
  if (t.dtype() != ir::dtype_of<T>())
    throw ModelError(ctx.node().describe() + ": Clip bound dtype " + ir::dtype_name(t.dtype()) +
                     " differs from the input's " + ir::dtype_name(ir::dtype_of<T>()));
  v = t.data<T>()[0];
  return true;
}

template <class T>
void clip_typed(KernelContext& ctx, compute_t<T> lo, compute_t<T> hi) {
  using C = compute_t<T>;
  const Tensor& x_t = ctx.in(0);
  Tensor& y_t = ctx.alloc_output(0, x_t.dtype(), x_t.dims());
  const T* x = x_t.data<T>().data();
  T* y = y_t.mutable_data<T>().data();
  if constexpr (std::is_same_v<T, f16>) {
    // Chunks converted in bulk (half_convert.h); the same values as the scalar loop.
    ctx.parallel_for(x_t.numel(), 4, [&](int64_t b, int64_t e) {
      float buf[1024];
      for (int64_t c = b; c < e; c += 1024) {
        const int64_t n = std::min<int64_t>(1024, e - c);
        f16_to_f32(x + c, buf, n);
        for (int64_t i = 0; i < n; ++i) {
          const float r = buf[i] < lo ? lo : buf[i];
          buf[i] = r > hi ? hi : r;
        }
        f32_to_f16(buf, y + c, n);
      }
    });
    return;
  }
  ctx.parallel_for(x_t.numel(), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const C v = static_cast<C>(x[i]);
      // NaN compares false both ways and passes through; min > max yields max.
      const C r = v < lo ? lo : v;
      y[i] = static_cast<T>(r > hi ? hi : r);
    }
  });
}

KernelFactory clip_factory() {
  return [](const ir::Node& n) -> Kernel {
    if (n.since_version > 0 && n.since_version < 11) {
      const float lo = n.attr_float("min", std::numeric_limits<float>::lowest());
      const float hi = n.attr_float("max", std::numeric_limits<float>::max());
      return [what = ew::what(n), lo, hi](KernelContext& ctx) {
        ir::dispatch<MCC_FLOAT_DTYPES>(ctx.in(0).dtype(), what, [&](auto tag) {
          using T = typename decltype(tag)::type;
          using C = compute_t<T>;
          clip_typed<T>(ctx, static_cast<C>(lo), static_cast<C>(hi));
        });
      };
    }
    return [what = ew::what(n)](KernelContext& ctx) {
      ir::dispatch<MCC_NUMERIC_DTYPES>(ctx.in(0).dtype(), what, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
        T v{};
        if (read_bound<T>(ctx, 1, v)) lo = static_cast<C>(v);
        if (read_bound<T>(ctx, 2, v)) hi = static_cast<C>(v);
        clip_typed<T>(ctx, lo, hi);
      });
    };
  };
}

}  // namespace

void register_where_clip(KernelRegistry& r) {
  r.add("Where", 1, 0, where_factory());
  r.add("Clip", 1, 0, clip_factory());
}

}  // namespace mcc::backends::cpu
