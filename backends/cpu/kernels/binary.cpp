// Binary elementwise kernels with numpy broadcasting.
//
// ONNX ops (domain ai.onnx, every opset version): Add, Sub, Mul, Div, Pow, Mod (fmod), BitShift
// (direction), BitwiseAnd, BitwiseOr, BitwiseXor, And, Or, Xor, Equal, Less, Greater,
// LessOrEqual, GreaterOrEqual, PRelu. Opsets before 7 with broadcast=1 (and axis) align B at
// `axis` of A; PRelu before 7 takes a per-channel 1-D slope.
//
// dtypes: Add/Sub/Mul/Div/Mod and the comparisons: f32, f64, f16, bf16 and every integer type
// (Equal also bool and string); Pow: base f32/f64/f16/bf16/i32/i64 with any numeric exponent
// (output has the base dtype); BitShift: u8..u64; Bitwise*: integer types; And/Or/Xor: bool;
// PRelu: floats, i32, i64, u32, u64. Accumulation: f16/bf16 in f32; integers in their own width
// with two's-complement wrap-around (no UB); Pow in double except f32^f32.
//
// Integer semantics: Div truncates toward zero like C (ONNX test data); division or Mod by zero
// yields 0 and INT_MIN / -1 wraps, instead of trapping. Mod with fmod=0 takes the divisor's sign
// (Python %), fmod=1 the dividend's (C fmod); float Mod with fmod=0 follows numpy's mod.
//
// Fast paths: same-shape and scalar operands (and any broadcast whose innermost run is contiguous)
// run as plain loops the compiler vectorises; f32 Pow with a scalar exponent 1, 2, 3, 0.5.
#include <cmath>
#include <limits>
#include <string>

#include "backends/cpu/kernels/elementwise.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;
using ir::Tensor;
using ew::compute_t;
using ew::kIsHalf;

// ---- integer arithmetic without UB (wraps modulo 2^bits)

template <class C>
C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}
template <class C>
C wrap_sub(C a, C b) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else return a - b;
}
template <class C>
C wrap_mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return a * b;
}
template <class C>
C safe_div(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>)
      if (b == -1) return wrap_sub(C(0), a);
    return static_cast<C>(a / b);
  } else {
    return a / b;
  }
}
/// Remainder; Floor=true: sign of the divisor (Python %), else sign of the dividend (C fmod).
template <bool Floor, class C>
C mod_of(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return 0;
      C r = static_cast<C>(a % b);
      if (Floor && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      return r;
    } else {
      return static_cast<C>(a % b);
    }
  } else {
    C r = std::fmod(a, b);
    if (Floor && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}

/// Integer power by squaring (wraps); negative exponents give 1/base^-e truncated.
template <class C>
C int_pow(C base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<C>)
      if (base == -1) return (e % 2 == 0) ? C(1) : C(-1);
    return 0;
  }
  C r = 1;
  while (e > 0) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return r;
}

// ---- broadcasting set-up

struct Operands {
  const Tensor* a;
  const Tensor* b;
  std::vector<int64_t> b_dims;  // B's dims after legacy (opset < 7) alignment
  std::vector<int64_t> out;
  ew::BroadcastPlan plan;
};

/// Legacy broadcasting of opsets < 7: broadcast=1 aligns B's dims at A's `axis` (default: the
/// trailing dims), which is numpy broadcasting after padding B with trailing 1s.
struct LegacyBroadcast {
  bool on = false;
  bool has_axis = false;
  int64_t axis = 0;
  static LegacyBroadcast of(const ir::Node& n) {
    LegacyBroadcast lb;
    if (n.since_version > 0 && n.since_version < 7 && n.attr_int("broadcast", 0) != 0) {
      lb.on = true;
      lb.has_axis = n.has_attr("axis");
      lb.axis = n.attr_int("axis", 0);
    }
    return lb;
  }
};

Operands prepare(const KernelContext& ctx, const LegacyBroadcast& lb) {
  Operands o;
  o.a = &ctx.in(0);
  o.b = &ctx.in(1);
  o.b_dims = o.b->dims();
  if (lb.on && lb.has_axis) {
    const int64_t ra = static_cast<int64_t>(o.a->rank()), rb = static_cast<int64_t>(o.b_dims.size());
    const int64_t axis = normalize_axis(ctx.node(), lb.axis, ra);
    if (axis + rb > ra)
      throw ModelError(ctx.node().describe() + ": legacy broadcast of B (rank " + std::to_string(rb) +
                       ") at axis " + std::to_string(axis) + " exceeds A's rank " + std::to_string(ra));
    o.b_dims.resize(static_cast<size_t>(ra - axis), 1);
  }
  o.out = broadcast_shapes(ctx.node(), o.a->dims(), o.b_dims);
  o.plan = ew::make_plan(o.out, {&o.a->dims(), &o.b_dims});
  return o;
}

void require_same_dtype(const KernelContext& ctx, const Operands& o) {
  if (o.a->dtype() != o.b->dtype())
    throw ModelError(ctx.node().describe() + ": inputs have different dtypes " + ir::dtype_name(o.a->dtype()) +
                     " and " + ir::dtype_name(o.b->dtype()));
}

/// Same-dtype op whose output has the input dtype. f(C, C) -> C on compute types.
template <DType... Ds, class F>
void same_type_op(KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb, const F& f,
                  int64_t cost = 1) {
  const Operands o = prepare(ctx, lb);
  require_same_dtype(ctx, o);
  Tensor& y_t = ctx.alloc_output_overwritten(0, o.a->dtype(), o.out);
  ir::dispatch<Ds...>(o.a->dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (std::is_same_v<T, f16>) {
      ew::run_binary_f16(ctx, o.plan, o.a->data<T>().data(), o.b->data<T>().data(), y_t.mutable_data<T>().data(),
                         [&f](auto x, auto y) { return f(x, y); }, cost);  // generic: not checked for integer T
    } else {
      ew::run_binary(ctx, o.plan, o.a->data<T>().data(), o.b->data<T>().data(), y_t.mutable_data<T>().data(),
                     [&f](T x, T y) { return static_cast<T>(f(static_cast<C>(x), static_cast<C>(y))); }, cost);
    }
  });
}

/// Same-dtype predicate with a bool output. f(C, C) -> bool.
template <DType... Ds, class F>
void compare_op(KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb, const F& f) {
  const Operands o = prepare(ctx, lb);
  require_same_dtype(ctx, o);
  Tensor& y_t = ctx.alloc_output(0, DType::Bool, o.out);
  ir::dispatch<Ds...>(o.a->dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    ew::run_binary(ctx, o.plan, o.a->data<T>().data(), o.b->data<T>().data(), y_t.mutable_data<bool>().data(),
                   [&f](T x, T y) { return static_cast<bool>(f(static_cast<C>(x), static_cast<C>(y))); });
  });
}

/// Factory for ops that need no attributes besides legacy broadcasting.
template <class Run>
KernelFactory simple_factory(Run run) {
  return [run](const ir::Node& n) -> Kernel {
    return [run, what = ew::what(n), lb = LegacyBroadcast::of(n)](KernelContext& ctx) { run(ctx, what, lb); };
  };
}

#define MCC_BINARY_NUMERIC(FN, COST)                                                           \
  simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) { \
    same_type_op<MCC_NUMERIC_DTYPES>(ctx, what, lb, [](auto x, auto y) { return FN(x, y); }, COST); \
  })

#define MCC_COMPARE(EXPR, ...)                                                                 \
  simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) { \
    compare_op<__VA_ARGS__>(ctx, what, lb, [](auto x, auto y) { return EXPR; });             \
  })

// ---- Pow

template <class T, class E>
void pow_typed(KernelContext& ctx, const Operands& o, Tensor& y_t) {
  const T* a = o.a->data<T>().data();
  const E* b = o.b->data<E>().data();
  T* y = y_t.mutable_data<T>().data();
  if constexpr (std::is_same_v<T, float>) {
    if (o.b->numel() == 1) {  // scalar exponent: the common x^2 / x^0.5 of decomposed norms
      const double e = static_cast<double>(static_cast<compute_t<E>>(b[0]));
      auto loop = [&](auto g) {
        parallel_for_work(ctx, o.plan.numel, 1, [&](int64_t s, int64_t t) { for (int64_t i = s; i < t; ++i) y[i] = g(a[i]); });
      };
      if (o.a->numel() == o.plan.numel) {
        if (e == 1.0) return loop([](float x) { return x; });
        if (e == 2.0) return loop([](float x) { return x * x; });
        if (e == 3.0) return loop([](float x) { return x * x * x; });
        if (e == 0.5) return loop([](float x) { return std::sqrt(x); });
      }
    }
  }
  ew::run_binary(ctx, o.plan, a, b, y, [](T x, E p) -> T {
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_integral_v<E>) {
        if constexpr (std::is_unsigned_v<E>)
          return int_pow<T>(x, static_cast<int64_t>(std::min<uint64_t>(p, std::numeric_limits<int64_t>::max())));
        else
          return int_pow<T>(x, static_cast<int64_t>(p));
      } else {
        return ew::float_to_int<T>(std::pow(static_cast<double>(x), static_cast<double>(static_cast<compute_t<E>>(p))));
      }
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<E, float>) {
      return std::pow(x, p);
    } else {
      return static_cast<T>(std::pow(static_cast<double>(static_cast<compute_t<T>>(x)),
                                     static_cast<double>(static_cast<compute_t<E>>(p))));
    }
  }, 20);
}

KernelFactory pow_factory() {
  return simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) {
    const Operands o = prepare(ctx, lb);
    Tensor& y_t = ctx.alloc_output_overwritten(0, o.a->dtype(), o.out);
    ir::dispatch<MCC_FLOAT_DTYPES, DType::I32, DType::I64>(o.a->dtype(), what + " (base)", [&](auto tb) {
      using T = typename decltype(tb)::type;
      ir::dispatch<MCC_NUMERIC_DTYPES>(o.b->dtype(), what + " (exponent)", [&](auto te) {
        using E = typename decltype(te)::type;
        pow_typed<T, E>(ctx, o, y_t);
      });
    });
  });
}

// ---- Mod, BitShift, PRelu

KernelFactory mod_factory() {
  return [](const ir::Node& n) -> Kernel {
    const int64_t fmod = n.attr_int("fmod", 0);
    if (fmod != 0 && fmod != 1) throw ModelError(n.describe() + ": fmod must be 0 or 1, got " + std::to_string(fmod));
    return [what = ew::what(n), fmod, lb = LegacyBroadcast::of(n)](KernelContext& ctx) {
      if (fmod == 1)
        same_type_op<MCC_NUMERIC_DTYPES>(ctx, what, lb, [](auto x, auto y) { return mod_of<false>(x, y); }, 10);
      else
        same_type_op<MCC_NUMERIC_DTYPES>(ctx, what, lb, [](auto x, auto y) { return mod_of<true>(x, y); }, 10);
    };
  };
}

KernelFactory bitshift_factory() {
  return [](const ir::Node& n) -> Kernel {
    const std::string dir = n.attr_string("direction", "");
    if (dir != "LEFT" && dir != "RIGHT")
      throw ModelError(n.describe() + ": BitShift direction must be LEFT or RIGHT, got '" + dir + "'");
    const bool left = dir == "LEFT";
    return [what = ew::what(n), left, lb = LegacyBroadcast::of(n)](KernelContext& ctx) {
      same_type_op<DType::U8, DType::U16, DType::U32, DType::U64>(ctx, what, lb, [left](auto x, auto s) {
        using C = decltype(x);
        // Shifting by the width or more is UB in C++; the bits are all shifted out.
        if (s >= static_cast<C>(sizeof(C) * 8)) return C(0);
        return left ? static_cast<C>(x << s) : static_cast<C>(x >> s);
      });
    };
  };
}

KernelFactory prelu_factory() {
  return [](const ir::Node& n) -> Kernel {
    const bool legacy = n.since_version > 0 && n.since_version < 7;
    return [what = ew::what(n), legacy](KernelContext& ctx) {
      Operands o;
      o.a = &ctx.in(0);
      o.b = &ctx.in(1);
      o.b_dims = o.b->dims();
      // Opset 6: a 1-D slope of length C applies per channel (axis 1).
      if (legacy && o.b_dims.size() == 1 && o.a->rank() >= 2 && o.b_dims[0] == o.a->dims()[1] && o.b_dims[0] != 1)
        o.b_dims.resize(o.a->rank() - 1, 1);
      o.out = broadcast_shapes(ctx.node(), o.a->dims(), o.b_dims);
      if (o.out != o.a->dims())
        throw ModelError(ctx.node().describe() + ": slope must broadcast to X's shape (unidirectional)");
      o.plan = ew::make_plan(o.out, {&o.a->dims(), &o.b_dims});
      require_same_dtype(ctx, o);
      Tensor& y_t = ctx.alloc_output_overwritten(0, o.a->dtype(), o.out);
      ir::dispatch<MCC_FLOAT_DTYPES, DType::I32, DType::I64, DType::U32, DType::U64>(o.a->dtype(), what, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        ew::run_binary(ctx, o.plan, o.a->data<T>().data(), o.b->data<T>().data(), y_t.mutable_data<T>().data(),
                       [](T x, T s) {
                         const C cx = static_cast<C>(x);
                         return cx < C(0) ? static_cast<T>(wrap_mul(static_cast<C>(s), cx)) : x;
                       });
      });
    };
  };
}

// ---- Equal (numeric, bool, string)

KernelFactory equal_factory() {
  return simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) {
    if (ctx.in(0).dtype() == DType::String) {
      const Operands o = prepare(ctx, lb);
      require_same_dtype(ctx, o);
      Tensor& y_t = ctx.alloc_output(0, DType::Bool, o.out);
      ew::run_binary(ctx, o.plan, o.a->strings().data(), o.b->strings().data(), y_t.mutable_data<bool>().data(),
                     [](const std::string& x, const std::string& y) { return x == y; });
      return;
    }
    compare_op<MCC_ALL_DTYPES>(ctx, what, lb, [](auto x, auto y) { return x == y; });
  });
}

}  // namespace

void register_binary(KernelRegistry& r) {
  r.add("Add", 1, 0, MCC_BINARY_NUMERIC(wrap_add, 1));
  r.add("Sub", 1, 0, MCC_BINARY_NUMERIC(wrap_sub, 1));
  r.add("Mul", 1, 0, MCC_BINARY_NUMERIC(wrap_mul, 1));
  r.add("Div", 1, 0, MCC_BINARY_NUMERIC(safe_div, 4));
  r.add("Pow", 1, 0, pow_factory());
  r.add("Mod", 1, 0, mod_factory());
  r.add("BitShift", 1, 0, bitshift_factory());
  r.add("PRelu", 1, 0, prelu_factory());

  r.add("BitwiseAnd", 1, 0, simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) {
          same_type_op<MCC_INT_DTYPES>(ctx, what, lb, [](auto x, auto y) { return x & y; });
        }));
  r.add("BitwiseOr", 1, 0, simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) {
          same_type_op<MCC_INT_DTYPES>(ctx, what, lb, [](auto x, auto y) { return x | y; });
        }));
  r.add("BitwiseXor", 1, 0, simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) {
          same_type_op<MCC_INT_DTYPES>(ctx, what, lb, [](auto x, auto y) { return x ^ y; });
        }));
  r.add("And", 1, 0, simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) {
          same_type_op<DType::Bool>(ctx, what, lb, [](bool x, bool y) { return x && y; });
        }));
  r.add("Or", 1, 0, simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) {
          same_type_op<DType::Bool>(ctx, what, lb, [](bool x, bool y) { return x || y; });
        }));
  r.add("Xor", 1, 0, simple_factory([](KernelContext& ctx, const std::string& what, const LegacyBroadcast& lb) {
          same_type_op<DType::Bool>(ctx, what, lb, [](bool x, bool y) { return x != y; });
        }));

  r.add("Equal", 1, 0, equal_factory());
  r.add("Less", 1, 0, MCC_COMPARE(x < y, MCC_NUMERIC_DTYPES));
  r.add("Greater", 1, 0, MCC_COMPARE(x > y, MCC_NUMERIC_DTYPES));
  r.add("LessOrEqual", 1, 0, MCC_COMPARE(x <= y, MCC_NUMERIC_DTYPES));
  r.add("GreaterOrEqual", 1, 0, MCC_COMPARE(x >= y, MCC_NUMERIC_DTYPES));
}

#undef MCC_BINARY_NUMERIC
#undef MCC_COMPARE

}  // namespace mcc::backends::cpu
