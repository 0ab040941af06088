// Unary elementwise kernels: math and activations.
//
// ONNX ops (domain ai.onnx, every opset version up to the newest; attribute defaults as in the
// spec): Abs, Neg, Sign, Exp, Log, Sqrt, Reciprocal, Floor, Ceil, Round (half to even), Erf,
// Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, IsNaN, IsInf
// (detect_positive/detect_negative), Not, BitwiseNot, Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid,
// HardSigmoid, HardSwish, Softplus, Softsign, Tanh, ThresholdedRelu, Shrink, Gelu
// (approximate none|tanh), Mish, Swish (opset 24: x * sigmoid(alpha * x)).
//
// dtypes: float ops take f32, f64, f16, bf16 (f16/bf16 are widened to f32 in blocks, computed,
// and rounded back); Abs/Sign/Shrink also every integer type, Neg/Relu the signed ones, Not bool,
// BitwiseNot the integer types. IsNaN/IsInf give bool. Accumulation: none (pointwise); f32
// transcendental hot paths (Exp, Log, Sqrt, Tanh, Sigmoid, Erf, Sin, Cos, Gelu) use Eigen's
// vectorised array functions, the rest are loops the compiler vectorises.
//
// Not supported: float8 inputs of IsNaN/IsInf (opset 20 allows them; mcc does not compute float8).
#include <cmath>
#include <limits>
#include <string>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include "backends/cpu/kernels/elementwise.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;
using ir::Tensor;
using ew::compute_t;
using ew::kIsHalf;

template <class C>
using ArrayMap = Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>>;
template <class C>
using ConstArrayMap = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>>;

/// Wraps an Eigen array expression g(X) as a block function op(x, y, n) over float or double.
template <class G>
auto eig(G g) {
  return [g](const auto* x, auto* y, int64_t n) {
    using C = std::remove_cv_t<std::remove_pointer_t<decltype(y)>>;
    ConstArrayMap<C> X(x, n);
    ArrayMap<C> Y(y, n);
    Y = g(X);
  };
}

/// Wraps a scalar function g(x) as a block function op(x, y, n) over float or double.
template <class G>
auto scal(G g) {
  return [g](const auto* x, auto* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = g(x[i]);
  };
}

constexpr int64_t kBlock = 1024;  // f16/bf16 are widened to f32 in blocks of this size

/// Runs a float block function over X (f32/f64 directly; f16/bf16 through f32 blocks).
template <class Op>
void unary_float(KernelContext& ctx, const std::string& what, const Op& op, int64_t cost) {
  const Tensor& x_t = ctx.in(0);
  Tensor& y_t = ctx.alloc_output_overwritten(0, x_t.dtype(), x_t.dims());
  ir::dispatch<MCC_FLOAT_DTYPES>(x_t.dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = x_t.data<T>().data();
    T* y = y_t.mutable_data<T>().data();
    parallel_for_work(ctx, x_t.numel(), cost, [&](int64_t b, int64_t e) {
      if constexpr (kIsHalf<T>) {
        float bx[kBlock], by[kBlock];
        for (int64_t s = b; s < e; s += kBlock) {
          const int64_t m = std::min(kBlock, e - s);
          if constexpr (std::is_same_v<T, f16>) {
            f16_to_f32(x + s, bx, m);
          } else {
            for (int64_t i = 0; i < m; ++i) bx[i] = static_cast<float>(x[s + i]);
          }
          op(static_cast<const float*>(bx), by, m);
          if constexpr (std::is_same_v<T, f16>) {
            f32_to_f16(by, y + s, m);
          } else {
            for (int64_t i = 0; i < m; ++i) y[s + i] = T(by[i]);
          }
        }
      } else {
        op(x + b, y + b, e - b);
      }
    });
  });
}

/// Registers a float unary op whose block function does not depend on attributes.
template <class Op>
KernelFactory float_factory(Op op, int64_t cost) {
  return [op, cost](const ir::Node& n) -> Kernel {
    return [op, cost, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, cost); };
  };
}

/// Runs a scalar function over any dtype of the list Ds; the output dtype is the input dtype or
/// bool (OutBool). f receives the compute type (f32 for f16/bf16).
template <bool OutBool, DType... Ds, class F>
void unary_map(KernelContext& ctx, const std::string& what, const F& f) {
  const Tensor& x_t = ctx.in(0);
  Tensor& y_t = ctx.alloc_output(0, OutBool ? DType::Bool : x_t.dtype(), x_t.dims());
  ir::dispatch<Ds...>(x_t.dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using TY = std::conditional_t<OutBool, bool, T>;
    using C = compute_t<T>;
    const T* x = x_t.data<T>().data();
    TY* y = y_t.mutable_data<TY>().data();
    parallel_for_work(ctx, x_t.numel(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = static_cast<TY>(f(static_cast<C>(x[i])));
    });
  });
}

// ---- scalar bodies shared by several dtypes

template <class C>
C sign_of(C v) {
  if constexpr (std::is_unsigned_v<C>) return v > 0 ? C(1) : C(0);
  else if constexpr (std::is_floating_point_v<C>) return v > 0 ? C(1) : (v < 0 ? C(-1) : (v == 0 ? C(0) : v));
  else return v > 0 ? C(1) : (v < 0 ? C(-1) : C(0));
}

template <class C>
C abs_of(C v) {
  if constexpr (std::is_unsigned_v<C>) return v;
  else if constexpr (std::is_floating_point_v<C>) return std::abs(v);
  // Wraps for the most negative value (two's complement), as numpy does, instead of UB.
  else return v < 0 ? static_cast<C>(C(0) - static_cast<std::make_unsigned_t<C>>(v)) : v;
}

template <class C>
C softplus_of(C x) {
  // log(1 + exp(x)) without overflow for large x.
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

float attr_f(const ir::Node& n, const char* name, float def) { return n.attr_float(name, def); }

// ---- factories

KernelFactory abs_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) {
      unary_map<false, MCC_NUMERIC_DTYPES>(ctx, what, [](auto v) { return abs_of(v); });
    };
  };
}

KernelFactory neg_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) {
      unary_map<false, MCC_FLOAT_DTYPES, DType::I8, DType::I16, DType::I32, DType::I64>(
          ctx, what, [](auto v) {
            using C = decltype(v);
            if constexpr (std::is_integral_v<C>)
              return static_cast<C>(std::make_unsigned_t<C>(0) - static_cast<std::make_unsigned_t<C>>(v));
            else return -v;
          });
    };
  };
}

KernelFactory sign_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) {
      unary_map<false, MCC_NUMERIC_DTYPES>(ctx, what, [](auto v) { return sign_of(v); });
    };
  };
}

KernelFactory relu_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) {
      const DType dt = ctx.in(0).dtype();
      if (dt == DType::F32 || dt == DType::F64 || dt == DType::F16 || dt == DType::BF16) {
        unary_float(ctx, what, eig([](const auto& x) {
          using C = typename std::remove_cvref_t<decltype(x)>::Scalar;
          return x.max(C(0));
        }), 1);
        return;
      }
      unary_map<false, DType::I8, DType::I16, DType::I32, DType::I64>(
          ctx, what, [](auto v) { return v > 0 ? v : decltype(v)(0); });
    };
  };
}

KernelFactory not_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) {
      unary_map<false, DType::Bool>(ctx, what, [](bool v) { return !v; });
    };
  };
}

KernelFactory bitwise_not_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) {
      unary_map<false, MCC_INT_DTYPES>(ctx, what, [](auto v) { return static_cast<decltype(v)>(~v); });
    };
  };
}

KernelFactory isnan_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) {
      unary_map<true, MCC_FLOAT_DTYPES>(ctx, what, [](auto v) { return std::isnan(v); });
    };
  };
}

KernelFactory isinf_factory() {
  return [](const ir::Node& n) -> Kernel {
    const bool pos = n.attr_int("detect_positive", 1) != 0;
    const bool neg = n.attr_int("detect_negative", 1) != 0;
    return [what = ew::what(n), pos, neg](KernelContext& ctx) {
      unary_map<true, MCC_FLOAT_DTYPES>(ctx, what, [pos, neg](auto v) {
        return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
      });
    };
  };
}

KernelFactory shrink_factory() {
  return [](const ir::Node& n) -> Kernel {
    const double bias = attr_f(n, "bias", 0.0f), lambd = attr_f(n, "lambd", 0.5f);
    return [what = ew::what(n), bias, lambd](KernelContext& ctx) {
      unary_map<false, MCC_NUMERIC_DTYPES>(ctx, what, [bias, lambd](auto v) {
        using C = decltype(v);
        const double x = static_cast<double>(v);
        if constexpr (std::is_floating_point_v<C>)
          return x < -lambd ? C(x + bias) : (x > lambd ? C(x - bias) : C(0));
        else  // integers: compute in double, convert back (values stay in range for sane attrs)
          return x < -lambd ? static_cast<C>(std::llround(x + bias))
                            : (x > lambd ? static_cast<C>(std::llround(x - bias)) : C(0));
      });
    };
  };
}

// Float activations with attributes: the factory reads them once and builds the block function.

KernelFactory leaky_relu_factory() {
  return [](const ir::Node& n) -> Kernel {
    const float alpha = attr_f(n, "alpha", 0.01f);
    auto op = scal([alpha](auto x) { using C = decltype(x); return x < C(0) ? C(alpha) * x : x; });
    return [op, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, 1); };
  };
}

KernelFactory elu_factory() {
  return [](const ir::Node& n) -> Kernel {
    const float alpha = attr_f(n, "alpha", 1.0f);
    auto op = eig([alpha](const auto& x) {
      using C = typename std::remove_cvref_t<decltype(x)>::Scalar;
      return (x < C(0)).select(C(alpha) * (x.exp() - C(1)), x);
    });
    return [op, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, 20); };
  };
}

KernelFactory celu_factory() {
  return [](const ir::Node& n) -> Kernel {
    const float alpha = attr_f(n, "alpha", 1.0f);
    if (alpha == 0.0f) throw ModelError(n.describe() + ": Celu alpha must not be 0");
    auto op = scal([alpha](auto x) {
      using C = decltype(x);
      const C a = C(alpha);
      return std::max(C(0), x) + std::min(C(0), a * (std::exp(x / a) - C(1)));
    });
    return [op, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, 20); };
  };
}

KernelFactory selu_factory() {
  return [](const ir::Node& n) -> Kernel {
    const float alpha = attr_f(n, "alpha", 1.67326319217681884765625f);
    const float gamma = attr_f(n, "gamma", 1.05070102214813232421875f);
    auto op = scal([alpha, gamma](auto x) {
      using C = decltype(x);
      return x > C(0) ? C(gamma) * x : C(gamma) * (C(alpha) * std::exp(x) - C(alpha));
    });
    return [op, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, 20); };
  };
}

KernelFactory hard_sigmoid_factory() {
  return [](const ir::Node& n) -> Kernel {
    const float alpha = attr_f(n, "alpha", 0.2f), beta = attr_f(n, "beta", 0.5f);
    auto op = scal([alpha, beta](auto x) {
      using C = decltype(x);
      return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
    });
    return [op, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, 1); };
  };
}

KernelFactory thresholded_relu_factory() {
  return [](const ir::Node& n) -> Kernel {
    const float alpha = attr_f(n, "alpha", 1.0f);
    auto op = scal([alpha](auto x) { using C = decltype(x); return x > C(alpha) ? x : C(0); });
    return [op, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, 1); };
  };
}

KernelFactory swish_factory() {
  return [](const ir::Node& n) -> Kernel {
    const float alpha = attr_f(n, "alpha", 1.0f);
    auto op = eig([alpha](const auto& x) {
      using C = typename std::remove_cvref_t<decltype(x)>::Scalar;
      return x * (C(alpha) * x).logistic();
    });
    return [op, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, 20); };
  };
}

KernelFactory gelu_factory() {
  return [](const ir::Node& n) -> Kernel {
    const std::string approx = n.attr_string("approximate", "none");
    if (approx == "none") {
      auto op = eig([](const auto& x) {
        using C = typename std::remove_cvref_t<decltype(x)>::Scalar;
        return C(0.5) * x * (C(1) + (x * C(M_SQRT1_2)).erf());
      });
      return [op, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, 30); };
    }
    if (approx == "tanh") {
      auto op = eig([](const auto& x) {
        using C = typename std::remove_cvref_t<decltype(x)>::Scalar;
        const C k = C(0.7978845608028654);  // sqrt(2/pi)
        return C(0.5) * x * (C(1) + (k * (x + C(0.044715) * x * x * x)).tanh());
      });
      return [op, what = ew::what(n)](KernelContext& ctx) { unary_float(ctx, what, op, 30); };
    }
    throw ModelError(n.describe() + ": Gelu approximate must be 'none' or 'tanh', got '" + approx + "'");
  };
}

}  // namespace

void register_unary(KernelRegistry& r) {
  // Integer-capable ops.
  r.add("Abs", 1, 0, abs_factory());
  r.add("Neg", 1, 0, neg_factory());
  r.add("Sign", 1, 0, sign_factory());
  r.add("Relu", 1, 0, relu_factory());
  r.add("Not", 1, 0, not_factory());
  r.add("BitwiseNot", 1, 0, bitwise_not_factory());
  r.add("IsNaN", 1, 0, isnan_factory());
  r.add("IsInf", 1, 0, isinf_factory());
  r.add("Shrink", 1, 0, shrink_factory());

  // Float math. Costs are rough per-element op counts (they only decide whether to go parallel).
  r.add("Exp", 1, 0, float_factory(eig([](const auto& x) { return x.exp(); }), 20));
  r.add("Log", 1, 0, float_factory(eig([](const auto& x) { return x.log(); }), 20));
  r.add("Sqrt", 1, 0, float_factory(eig([](const auto& x) { return x.sqrt(); }), 4));
  r.add("Reciprocal", 1, 0, float_factory(eig([](const auto& x) { return x.inverse(); }), 4));
  r.add("Floor", 1, 0, float_factory(scal([](auto x) { return std::floor(x); }), 1));
  r.add("Ceil", 1, 0, float_factory(scal([](auto x) { return std::ceil(x); }), 1));
  // nearbyint rounds half to even in the default rounding mode, as ONNX Round requires.
  r.add("Round", 1, 0, float_factory(scal([](auto x) { return std::nearbyint(x); }), 1));
  r.add("Erf", 1, 0, float_factory(eig([](const auto& x) { return x.erf(); }), 20));
  r.add("Sin", 1, 0, float_factory(eig([](const auto& x) { return x.sin(); }), 20));
  r.add("Cos", 1, 0, float_factory(eig([](const auto& x) { return x.cos(); }), 20));
  r.add("Tan", 1, 0, float_factory(scal([](auto x) { return std::tan(x); }), 40));
  r.add("Asin", 1, 0, float_factory(scal([](auto x) { return std::asin(x); }), 40));
  r.add("Acos", 1, 0, float_factory(scal([](auto x) { return std::acos(x); }), 40));
  r.add("Atan", 1, 0, float_factory(scal([](auto x) { return std::atan(x); }), 40));
  r.add("Sinh", 1, 0, float_factory(scal([](auto x) { return std::sinh(x); }), 40));
  r.add("Cosh", 1, 0, float_factory(scal([](auto x) { return std::cosh(x); }), 40));
  r.add("Asinh", 1, 0, float_factory(scal([](auto x) { return std::asinh(x); }), 40));
  r.add("Acosh", 1, 0, float_factory(scal([](auto x) { return std::acosh(x); }), 40));
  r.add("Atanh", 1, 0, float_factory(scal([](auto x) { return std::atanh(x); }), 40));

  // Activations.
  r.add("Tanh", 1, 0, float_factory(eig([](const auto& x) { return x.tanh(); }), 20));
  r.add("Sigmoid", 1, 0, float_factory(eig([](const auto& x) { return x.logistic(); }), 20));
  r.add("Softplus", 1, 0, float_factory(scal([](auto x) { return softplus_of(x); }), 40));
  r.add("Softsign", 1, 0, float_factory(scal([](auto x) { return x / (decltype(x)(1) + std::abs(x)); }), 4));
  r.add("HardSwish", 1, 0, float_factory(scal([](auto x) {
          using C = decltype(x);
          return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
        }), 2));
  r.add("Mish", 1, 0, float_factory(scal([](auto x) { return x * std::tanh(softplus_of(x)); }), 60));
  r.add("LeakyRelu", 1, 0, leaky_relu_factory());
  r.add("Swish", 24, 0, swish_factory());
  r.add("Elu", 1, 0, elu_factory());
  r.add("Celu", 1, 0, celu_factory());
  r.add("Selu", 1, 0, selu_factory());
  r.add("HardSigmoid", 1, 0, hard_sigmoid_factory());
  r.add("ThresholdedRelu", 1, 0, thresholded_relu_factory());
  r.add("Gelu", 1, 0, gelu_factory());
}

}  // namespace mcc::backends::cpu
