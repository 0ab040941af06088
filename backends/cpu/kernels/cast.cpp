// Cast and CastLike.
//
// ONNX ops (domain ai.onnx): Cast 1-5 (`to` given as a type name string, e.g. "FLOAT"), Cast 6+
// (`to` as a TensorProto data type; the opset-19+ `saturate` attribute only concerns float8 and
// is accepted), CastLike 15+ (target dtype taken from the second input).
//
// dtypes: any pair of f32, f64, f16, bf16, i8..i64, u8..u64, bool and string. Conversions:
// float -> float rounds to nearest even (f16/bf16 through Eigen's RNE converters); float -> int
// truncates toward zero, NaN and out-of-range values follow numpy on x86 (see ew::float_to_int);
// int -> int wraps modulo 2^bits; anything -> bool is `!= 0` (NaN is true); bool -> number is
// 0/1. Strings parse with strtod/strtoll ("NaN", "INF", "-INF" accepted) and numbers print as
// numpy's str() does (shortest round-trip digits, positional in [1e-4, 1e16), "1.0" for integral
// floats, "True"/"False" for bool).
//
// Not supported: float8, int4/uint4 and float4 source or target dtypes (UnsupportedError).
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "backends/cpu/kernels/elementwise.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;
using ir::Tensor;
using ew::kIsHalf;

template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsHalf<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(v ? 1 : 0);
  } else if constexpr (kIsHalf<To>) {
    if constexpr (std::is_floating_point_v<From>) return To(static_cast<float>(v));
    else return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);
  } else if constexpr (std::is_floating_point_v<From>) {
    return ew::float_to_int<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);  // integer -> integer: modular (C++20)
  }
}

// ---- numbers to strings, as numpy's str()

template <class F>
std::string float_to_string(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);  // "-d.ddde+XX"
  const size_t epos = sci.find('e');
  std::string mant = sci.substr(0, epos);
  const int exp10 = std::stoi(sci.substr(epos + 1));
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  const F a = std::abs(v);
  std::string out;
  if (a >= F(1e-4) && a < F(1e16)) {
    // Positional: the decimal point goes after digit exp10 (may need zero padding either side).
    const int point = exp10 + 1;
    if (point <= 0) {
      out = "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int ae = std::abs(exp10);
    out += std::string(exp10 < 0 ? "e-" : "e+") + (ae < 10 ? "0" : "") + std::to_string(ae);
  }
  return neg ? "-" + out : out;
}

template <class From>
std::string to_string_value(From v) {
  if constexpr (std::is_same_v<From, bool>) return v ? "True" : "False";
  else if constexpr (kIsHalf<From>) return float_to_string(static_cast<float>(v));
  else if constexpr (std::is_floating_point_v<From>) return float_to_string(v);
  else return std::to_string(v);
}

// ---- strings to numbers

template <class To>
To from_string_value(const ir::Node& n, const std::string& s) {
  const char* p = s.c_str();
  char* end = nullptr;
  if constexpr (std::is_same_v<To, bool>) {
    if (s == "True" || s == "true") return true;
    if (s == "False" || s == "false") return false;
    const double d = std::strtod(p, &end);
    if (end == p) throw ModelError(n.describe() + ": cannot parse '" + s + "' as bool");
    return d != 0.0;
  } else if constexpr (std::is_integral_v<To>) {
    errno = 0;
    if constexpr (std::is_signed_v<To>) {
      const long long v = std::strtoll(p, &end, 10);
      if (end != p && *end == '\0' && errno == 0) return static_cast<To>(v);
    } else {
      const unsigned long long v = std::strtoull(p, &end, 10);
      if (end != p && *end == '\0' && errno == 0 && s.find('-') == std::string::npos) return static_cast<To>(v);
    }
    const double d = std::strtod(p, &end);  // "3.0", "1e3"
    if (end == p) throw ModelError(n.describe() + ": cannot parse '" + s + "' as a number");
    return ew::float_to_int<To>(d);
  } else {
    // f32 parses directly (no double rounding); others through double.
    if constexpr (std::is_same_v<To, float>) {
      const float f = std::strtof(p, &end);
      if (end == p) throw ModelError(n.describe() + ": cannot parse '" + s + "' as a number");
      return f;
    } else {
      const double d = std::strtod(p, &end);
      if (end == p) throw ModelError(n.describe() + ": cannot parse '" + s + "' as a number");
      return convert<To>(d);
    }
  }
}

// ---- the kernel

void cast_tensor(KernelContext& ctx, const std::string& what, const Tensor& x, DType to) {
  if (x.dtype() == to) {  // no-op cast: share the buffer
    ctx.set_output(0, x);
    return;
  }
  Tensor& y = ctx.alloc_output(0, to, x.dims());
  const int64_t n = x.numel();
  if (x.dtype() == DType::String) {
    const auto& src = x.strings();
    ir::dispatch<MCC_ALL_DTYPES>(to, what + " (target)", [&](auto tt) {
      using To = typename decltype(tt)::type;
      To* dst = y.mutable_data<To>().data();
      for (int64_t i = 0; i < n; ++i) dst[i] = from_string_value<To>(ctx.node(), src[static_cast<size_t>(i)]);
    });
    return;
  }
  ir::dispatch<MCC_ALL_DTYPES>(x.dtype(), what + " (source)", [&](auto tf) {
    using From = typename decltype(tf)::type;
    const From* src = x.data<From>().data();
    if (to == DType::String) {
      auto& dst = y.mutable_strings();
      for (int64_t i = 0; i < n; ++i) dst[static_cast<size_t>(i)] = to_string_value(src[i]);
      return;
    }
    ir::dispatch<MCC_ALL_DTYPES>(to, what + " (target)", [&](auto tt) {
      using To = typename decltype(tt)::type;
      To* dst = y.mutable_data<To>().data();
      ctx.parallel_for(n, 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dst[i] = convert<To>(src[i]);
      });
    });
  });
}

/// Cast 1-5 spell the target as a name ("FLOAT", "INT64", ...).
DType dtype_from_name(const ir::Node& n, const std::string& s) {
  struct Name { const char* name; DType dt; };
  static constexpr Name kNames[] = {
      {"FLOAT", DType::F32},   {"UINT8", DType::U8},    {"INT8", DType::I8},     {"UINT16", DType::U16},
      {"INT16", DType::I16},   {"INT32", DType::I32},   {"INT64", DType::I64},   {"STRING", DType::String},
      {"BOOL", DType::Bool},   {"FLOAT16", DType::F16}, {"DOUBLE", DType::F64},  {"UINT32", DType::U32},
      {"UINT64", DType::U64},  {"BFLOAT16", DType::BF16}};
  for (const auto& e : kNames)
    if (s == e.name) return e.dt;
  throw ModelError(n.describe() + ": unknown Cast target type '" + s + "'");
}

KernelFactory cast_factory() {
  return [](const ir::Node& n) -> Kernel {
    const ir::Attribute* a = n.attr("to");
    if (!a) throw ModelError(n.describe() + ": Cast needs the 'to' attribute");
    const DType to = a->kind == ir::AttrKind::String ? dtype_from_name(n, n.attr_string("to", ""))
                                                     : static_cast<DType>(n.attr_int("to", 0));
    const auto& inf = ir::info(to);
    if (!inf.computable)
      throw UnsupportedError(n.describe() + ": Cast to " + ir::dtype_name(to) + " is not supported by the cpu backend");
    return [what = ew::what(n), to](KernelContext& ctx) { cast_tensor(ctx, what, ctx.in(0), to); };
  };
}

KernelFactory cast_like_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) { cast_tensor(ctx, what, ctx.in(0), ctx.in(1).dtype()); };
  };
}

}  // namespace

void register_cast_ops(KernelRegistry& r) {
  r.add("Cast", 1, 0, cast_factory());
  r.add("CastLike", 1, 0, cast_like_factory());
}

}  // namespace mcc::backends::cpu
