// Shape and constant ops.
//   Reshape 1-24 (opset < 5: `shape` attribute; 14+: allowzero), Flatten 1-24, Squeeze and
//   Unsqueeze 1-24 (axes attribute before 13, input from 13; either is accepted at any version),
//   Shape 1-24 (start/end from 15), Size 1-24, Identity 1-24 (tensors, sequences, optionals),
//   Constant 1-24 (value, value_float(s), value_int(s), value_string(s)), ConstantOfShape 9-24,
//   Dropout 1-22 (inference: identity, a view; opset < 7 is_test is ignored and the op always
//   runs in inference, as in ONNX Runtime; training_mode with a seeded mt19937 mask), EyeLike 9-22,
//   Range 11+.
// dtypes: every fixed-size dtype and string for the views (Reshape/Flatten/Squeeze/Unsqueeze/
//   Identity return zero-copy views of the input buffer); ConstantOfShape any fixed-size dtype;
//   EyeLike all numeric + bool; Range f32/f64/f16/bf16 and all integers; Dropout training f32/f64/
//   f16/bf16 (computed in f32/f64).
// Accumulation: Range computes start + i * delta in double (floats) or int64 (integers).
// Not supported: Constant sparse_value; Dropout in training mode cannot reproduce another
//   runtime's random mask (only ratio 0 matches bit for bit).
#include <cmath>
#include <limits>
#include <random>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/tensor_ops_util.h"
#include "backends/kernel_shapes.h"

namespace mcc::backends::cpu {
namespace {
using namespace tensor_ops;
using ir::DType;
using ir::Tensor;

// ---------------------------------------------------------------- Reshape family (views)

Kernel make_reshape(const ir::Node& n) {
  const bool allowzero = n.attr_int("allowzero", 0) != 0;
  const std::vector<int64_t> attr_shape = n.attr_ints("shape");
  const bool has_attr_shape = n.has_attr("shape");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    std::vector<int64_t> spec;
    if (ctx.has_input(1))
      spec = read_int_tensor(ctx.node(), ctx.in(1), "Reshape shape");
    else if (has_attr_shape)
      spec = attr_shape;
    else
      throw ModelError(ctx.node().describe() + ": Reshape needs a shape input");
    std::vector<int64_t> out(spec.size());
    int64_t infer = -1, known = 1;
    bool has_zero = false;
    for (size_t i = 0; i < spec.size(); ++i) {
      int64_t s = spec[i];
      if (s == 0 && !allowzero) {
        if (i >= x.rank())
          throw ModelError(ctx.node().describe() + ": Reshape shape[" + std::to_string(i) +
                           "] = 0 copies a dimension the input (rank " + std::to_string(x.rank()) +
                           ") lacks");
        s = x.dims()[i];
      }
      if (s == -1) {
        if (infer >= 0)
          throw ModelError(ctx.node().describe() + ": Reshape shape has more than one -1");
        infer = static_cast<int64_t>(i);
        continue;
      }
      if (s < -1)
        throw ModelError(ctx.node().describe() + ": Reshape shape has invalid value " +
                         std::to_string(s));
      if (s == 0) has_zero = true;
      out[i] = s;
      if (__builtin_mul_overflow(known, s, &known))
        throw ModelError(ctx.node().describe() + ": Reshape shape " + dims_str(spec) +
                         " overflows int64");
    }
    if (infer >= 0) {
      if (allowzero && has_zero)
        throw ModelError(ctx.node().describe() +
                         ": Reshape with allowzero=1 cannot combine 0 and -1");
      if (known == 0) {
        if (x.numel() != 0)
          throw ModelError(ctx.node().describe() +
                           ": Reshape cannot infer -1 next to a zero dimension");
        out[static_cast<size_t>(infer)] = 0;
      } else {
        if (x.numel() % known != 0)
          throw ModelError(ctx.node().describe() + ": Reshape cannot reshape " +
                           dims_str(x.dims()) + " to " + dims_str(spec));
        out[static_cast<size_t>(infer)] = x.numel() / known;
      }
    }
    if (ir::checked_numel(out) != x.numel())
      throw ModelError(ctx.node().describe() + ": Reshape cannot reshape " + dims_str(x.dims()) +
                       " (" + std::to_string(x.numel()) + " elements) to " + dims_str(out));
    ctx.set_output(0, x.reshaped(std::move(out)));
  };
}

Kernel make_flatten(const ir::Node& n) {
  const int64_t axis_attr = n.attr_int("axis", 1);
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const auto r = static_cast<int64_t>(x.rank());
    int64_t axis = axis_attr < 0 ? axis_attr + r : axis_attr;
    if (axis < 0 || axis > r)
      throw ModelError(ctx.node().describe() + ": Flatten axis " + std::to_string(axis_attr) +
                       " is out of range for rank " + std::to_string(r));
    int64_t a = 1, b = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= x.dims()[static_cast<size_t>(i)];
    ctx.set_output(0, x.reshaped({a, b}));
  };
}

Kernel make_squeeze(const ir::Node& n) {
  const std::vector<int64_t> attr_axes = n.attr_ints("axes");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const auto r = static_cast<int64_t>(x.rank());
    std::vector<int64_t> axes =
        ctx.has_input(1) ? read_int_tensor(ctx.node(), ctx.in(1), "Squeeze axes") : attr_axes;
    std::vector<bool> drop(static_cast<size_t>(r), false);
    if (axes.empty()) {
      for (int64_t i = 0; i < r; ++i)
        drop[static_cast<size_t>(i)] = x.dims()[static_cast<size_t>(i)] == 1;
    } else {
      for (int64_t a : axes) {
        const int64_t ax = normalize_axis(ctx.node(), a, r);
        if (x.dims()[static_cast<size_t>(ax)] != 1)
          throw ModelError(ctx.node().describe() + ": Squeeze axis " + std::to_string(a) +
                           " has size " + std::to_string(x.dims()[static_cast<size_t>(ax)]) +
                           ", not 1");
        drop[static_cast<size_t>(ax)] = true;
      }
    }
    std::vector<int64_t> out;
    for (int64_t i = 0; i < r; ++i)
      if (!drop[static_cast<size_t>(i)]) out.push_back(x.dims()[static_cast<size_t>(i)]);
    ctx.set_output(0, x.reshaped(std::move(out)));
  };
}

Kernel make_unsqueeze(const ir::Node& n) {
  const std::vector<int64_t> attr_axes = n.attr_ints("axes");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    std::vector<int64_t> axes =
        ctx.has_input(1) ? read_int_tensor(ctx.node(), ctx.in(1), "Unsqueeze axes") : attr_axes;
    const auto out_rank = static_cast<int64_t>(x.rank() + axes.size());
    std::vector<bool> ins(static_cast<size_t>(out_rank), false);
    for (int64_t a : axes) {
      const int64_t ax = normalize_axis(ctx.node(), a, out_rank);
      if (ins[static_cast<size_t>(ax)])
        throw ModelError(ctx.node().describe() + ": Unsqueeze axes repeat axis " +
                         std::to_string(a));
      ins[static_cast<size_t>(ax)] = true;
    }
    std::vector<int64_t> out;
    size_t k = 0;
    for (int64_t i = 0; i < out_rank; ++i)
      out.push_back(ins[static_cast<size_t>(i)] ? 1 : x.dims()[k++]);
    ctx.set_output(0, x.reshaped(std::move(out)));
  };
}

Kernel make_shape(const ir::Node& n) {
  const int64_t start_attr = n.attr_int("start", 0);
  const bool has_end = n.has_attr("end");
  const int64_t end_attr = n.attr_int("end", 0);
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const auto [s, e] = shape_range(static_cast<int64_t>(x.rank()), start_attr, has_end, end_attr);
    const int64_t len = e - s;
    auto y = ctx.alloc_output(0, DType::I64, {len}).mutable_data<int64_t>();
    for (int64_t i = 0; i < len; ++i)
      y[static_cast<size_t>(i)] = x.dims()[static_cast<size_t>(s + i)];
  };
}

void run_size(KernelContext& ctx) {
  ctx.alloc_output(0, DType::I64, {}).mutable_data<int64_t>()[0] = ctx.in(0).numel();
}

void run_identity(KernelContext& ctx) {
  const RValue* v = ctx.in_value(0);
  if (!v) throw ModelError(ctx.node().describe() + ": Identity input is missing");
  ctx.set_output_value(0, *v);
}

// ---------------------------------------------------------------- constants

Kernel make_constant(const ir::Node& n) {
  Tensor t;
  int found = 0;
  for (const auto& a : n.attrs) {
    if (a.name == "value") {
      t = *n.attr_tensor("value");
      ++found;
    } else if (a.name == "value_float") {
      t = Tensor::scalar<float>(n.attr_float("value_float", 0));
      ++found;
    } else if (a.name == "value_floats") {
      auto v = n.attr_floats("value_floats");
      t = Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
      ++found;
    } else if (a.name == "value_int") {
      t = Tensor::scalar<int64_t>(n.attr_int("value_int", 0));
      ++found;
    } else if (a.name == "value_ints") {
      auto v = n.attr_ints("value_ints");
      t = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
      ++found;
    } else if (a.name == "value_string") {
      t = Tensor::from_strings({}, {n.attr_string("value_string", "")});
      ++found;
    } else if (a.name == "value_strings") {
      auto v = n.attr_strings("value_strings");
      t = Tensor::from_strings({static_cast<int64_t>(v.size())}, v);
      ++found;
    } else if (a.name == "sparse_value") {
      throw UnsupportedError(n.describe() +
                             ": Constant with sparse_value is not supported by the cpu backend");
    }
  }
  if (found != 1)
    throw ModelError(n.describe() + ": Constant needs exactly one value attribute, got " +
                     std::to_string(found));
  return [t](KernelContext& ctx) { ctx.set_output(0, t); };
}

Kernel make_constant_of_shape(const ir::Node& n) {
  Tensor value = Tensor::scalar<float>(0.f);
  if (const Tensor* v = n.attr_tensor("value")) {
    if (v->numel() != 1)
      throw ModelError(n.describe() + ": ConstantOfShape value must hold one element, got " +
                       std::to_string(v->numel()));
    check_movable(n, v->dtype(), "value");
    value = *v;
  }
  return [value](KernelContext& ctx) {
    const auto dims = read_int_tensor(ctx.node(), ctx.in(0), "ConstantOfShape shape");
    for (int64_t d : dims)
      if (d < 0)
        throw ModelError(ctx.node().describe() + ": ConstantOfShape shape " + dims_str(dims) +
                         " is negative");
    Tensor& y = ctx.alloc_output(0, value.dtype(), dims);
    fill_elems(value, 0, y, 0, y.numel());
  };
}

Kernel make_eye_like(const ir::Node& n) {
  const int64_t k = n.attr_int("k", 0);
  const bool has_dtype = n.has_attr("dtype");
  const auto dt_attr = static_cast<DType>(n.attr_int("dtype", 1));
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    if (x.rank() != 2)
      throw ModelError(ctx.node().describe() + ": EyeLike input must be 2-D, got " +
                       dims_str(x.dims()));
    const DType dt = has_dtype ? dt_attr : x.dtype();
    const int64_t rows = x.dims()[0], cols = x.dims()[1];
    Tensor& y = ctx.alloc_output(0, dt, x.dims());
    ir::dispatch<MCC_ALL_DTYPES>(dt, ctx.node().describe() + ": EyeLike", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto out = y.mutable_data<T>();
      std::fill(out.begin(), out.end(), T(0));
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t j = i + k;
        if (j >= 0 && j < cols) out[static_cast<size_t>(i * cols + j)] = T(1);
      }
    });
  };
}

void run_range(KernelContext& ctx) {
  const Tensor &s = ctx.in(0), &l = ctx.in(1), &d = ctx.in(2);
  if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1)
    throw ModelError(ctx.node().describe() + ": Range start, limit and delta must be scalars");
  if (l.dtype() != s.dtype() || d.dtype() != s.dtype())
    throw ModelError(ctx.node().describe() + ": Range start, limit and delta must share one dtype");
  ir::dispatch<MCC_NUMERIC_DTYPES>(s.dtype(), ctx.node().describe() + ": Range", [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr bool kInt = std::is_integral_v<T>;
    using A = std::conditional_t<kInt, int64_t, double>;
    const A start = static_cast<A>(s.data<T>()[0]), limit = static_cast<A>(l.data<T>()[0]),
            delta = static_cast<A>(d.data<T>()[0]);
    if (delta == A(0)) throw ModelError(ctx.node().describe() + ": Range delta is zero");
    int64_t count;
    if constexpr (kInt) {
      // 128-bit span: limit - start may not fit int64 for extreme values.
      const __int128 span = static_cast<__int128>(limit) - start;
      const __int128 c =
          span / delta + ((span % delta != 0 && ((span > 0) == (delta > 0))) ? 1 : 0);
      if (c > std::numeric_limits<int64_t>::max())
        throw ModelError(ctx.node().describe() + ": Range is too long");
      count = static_cast<int64_t>(c);
    } else {
      const double c = std::ceil((limit - start) / delta);
      if (!std::isfinite(c))
        throw ModelError(ctx.node().describe() + ": Range length is not finite");
      count = static_cast<int64_t>(c);
    }
    count = std::max<int64_t>(count, 0);
    auto y = ctx.alloc_output(0, s.dtype(), {count}).template mutable_data<T>();
    for (int64_t i = 0; i < count; ++i)
      y[static_cast<size_t>(i)] = static_cast<T>(start + static_cast<A>(i) * delta);
  });
}

// ---------------------------------------------------------------- Dropout

Kernel make_dropout(const ir::Node& n) {
  const float ratio_attr = n.attr_float("ratio", 0.5f);
  const bool has_seed = n.has_attr("seed");
  const int64_t seed = n.attr_int("seed", 0);
  // Versions before 10 type the mask like the data; from 10 on it is bool.
  const bool bool_mask = n.since_version >= 10;
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    float ratio = ratio_attr;
    if (ctx.has_input(1)) {
      const auto r = read_float_tensor(ctx.node(), ctx.in(1), "Dropout ratio");
      if (r.size() != 1)
        throw ModelError(ctx.node().describe() + ": Dropout ratio must be a scalar");
      ratio = r[0];
    }
    bool training = false;
    if (ctx.has_input(2)) {
      const Tensor& t = ctx.in(2);
      if (t.dtype() != DType::Bool || t.numel() != 1)
        throw ModelError(ctx.node().describe() + ": Dropout training_mode must be a bool scalar");
      training = t.data<bool>()[0];
    }
    if (ratio < 0.f || ratio >= 1.f) {
      if (training || ctx.has_input(1))
        throw ModelError(ctx.node().describe() + ": Dropout ratio " + std::to_string(ratio) +
                         " is outside [0, 1)");
    }
    const DType mask_dt = bool_mask ? DType::Bool : x.dtype();
    if (!training || ratio == 0.f) {
      ctx.set_output(0, x);
      if (ctx.wants_output(1)) {
        Tensor& m = ctx.alloc_output(1, mask_dt, x.dims());
        ir::dispatch<MCC_ALL_DTYPES>(mask_dt, ctx.node().describe() + ": Dropout mask",
                                     [&](auto tag) {
                                       using T = typename decltype(tag)::type;
                                       auto md = m.mutable_data<T>();
                                       std::fill(md.begin(), md.end(), T(1));
                                     });
      }
      return;
    }
    // Training with ratio > 0: a seeded Bernoulli keep-mask, kept values scaled by 1/(1-ratio).
    std::mt19937_64 rng(has_seed ? static_cast<uint64_t>(seed) : 0u);
    std::uniform_real_distribution<double> uni(0.0, 1.0);
    const double scale = 1.0 / (1.0 - ratio);
    Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    std::vector<uint8_t> keep(static_cast<size_t>(x.numel()));
    for (auto& k : keep) k = uni(rng) >= ratio ? 1 : 0;
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), ctx.node().describe() + ": Dropout", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto in = x.data<T>();
      auto out = y.mutable_data<T>();
      for (size_t i = 0; i < in.size(); ++i)
        out[i] = keep[i] ? T(static_cast<double>(in[i]) * scale) : T(0);
    });
    if (ctx.wants_output(1)) {
      Tensor& m = ctx.alloc_output(1, mask_dt, x.dims());
      ir::dispatch<MCC_ALL_DTYPES>(mask_dt, ctx.node().describe() + ": Dropout mask",
                                   [&](auto tag) {
                                     using T = typename decltype(tag)::type;
                                     auto md = m.mutable_data<T>();
                                     for (size_t i = 0; i < keep.size(); ++i) md[i] = T(keep[i]);
                                   });
    }
  };
}

}  // namespace

void register_shape_ops(KernelRegistry& r) {
  r.add("Reshape", 1, 0, make_reshape);
  r.add("Flatten", 1, 0, make_flatten);
  r.add("Squeeze", 1, 0, make_squeeze);
  r.add("Unsqueeze", 1, 0, make_unsqueeze);
  r.add("Shape", 1, 0, make_shape);
  r.add("Size", 1, 0, stateless(run_size));
  r.add("Identity", 1, 0, stateless(run_identity));
  r.add("Constant", 1, 0, make_constant);
  r.add("ConstantOfShape", 9, 0, make_constant_of_shape);
  r.add("EyeLike", 9, 0, make_eye_like);
  r.add("Range", 11, 0, stateless(run_range));
  r.add("Dropout", 1, 0, make_dropout);
}

}  // namespace mcc::backends::cpu
