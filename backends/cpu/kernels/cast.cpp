// Cast and CastLike.
//
// ONNX ops (domain ai.onnx): Cast 1-5 (`to` given as a type name string, e.g. "FLOAT"), Cast 6+
// (`to` as a TensorProto data type; the opset-19+ `saturate` attribute only concerns float8 and
// is accepted), CastLike 15+ (target dtype taken from the second input).
//
// dtypes: any pair of f32, f64, f16, bf16, i8..i64, u8..u64, bool and string. Conversions:
// float -> float rounds to nearest even (f16/bf16 through Eigen's RNE converters; f64 sources
// first round to odd in f32 so there is no double rounding; f32/f64 -> bf16 before opset 19
// truncates, as ONNX's reference of those opsets did); float -> int
// truncates toward zero, NaN and out-of-range values follow numpy on x86 (see ew::float_to_int);
// int -> int wraps modulo 2^bits; anything -> bool is `!= 0` (NaN is true); bool -> number is
// 0/1. Strings parse with strtod/strtoll ("NaN", "INF", "-INF" accepted) and numbers print as
// numpy's str() does (shortest round-trip digits, positional in [1e-4, 1e16), "1.0" for integral
// floats, "True"/"False" for bool).
//
// Narrow dtypes (opset 19+/21+): float8 E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, float4 E2M1, int4 and
// uint4 (4-bit values packed two per byte, low nibble first) go through a double: decoding is
// exact; encoding to float8/float4 rounds to nearest even and follows the spec's `saturate`
// tables (saturate=1: out-of-range and infinities clamp to the largest finite value; saturate=0:
// NaN, or infinity for E5M2; float4 always saturates); int4/uint4 truncate like other integer
// casts and wrap modulo 16 (ONNX test data). Opset 25: int2/uint2 (four per byte, lowest bits
// first) truncate and wrap modulo 4 the same way; float8 E8M0 (exponent only, 2^(code-127), 0xFF
// is NaN) is encoded from the f32 bits of the value as ONNX's reference does: the sign is
// ignored, `round_mode` "up" (default) bumps the exponent when any mantissa bit is set, "down"
// keeps it, "nearest" rounds on the guard/round/sticky bits; with saturate=1 the exponent never
// rounds past 254 (the largest finite value); NaN and infinity give 0xFF.
//
// Not supported: float6 (a dtype mcc's IR does not know), and casts between strings and the
// narrow dtypes (UnsupportedError).
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>
#include <string>

#include "backends/cpu/kernels/elementwise.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;
using ir::Tensor;
using ew::kIsHalf;

/// double -> float rounding to odd: with f32's 13 extra mantissa bits over f16 (16 over bf16),
/// a following round-to-nearest-even to f16/bf16 then equals direct rounding of the double (no
/// double-rounding error).
inline float to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (!std::isfinite(d) || static_cast<double>(f) == d) return f;
  if (std::isinf(f) || std::abs(static_cast<double>(f)) > std::abs(d)) f = std::nextafter(f, 0.0f);  // truncate
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;  // sticky bit: "something was cut off"
  std::memcpy(&f, &bits, 4);
  return f;
}

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
    if constexpr (std::is_same_v<From, double>) return To(to_float_round_odd(v));
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

// ---- narrow dtypes: float8, float4, int4/uint4

/// A small float format: sign, `ebits` exponent bits with `bias`, `mbits` mantissa bits.
/// ieee: all-ones exponent is Inf/NaN (E5M2); fn: only all-ones exponent and mantissa is NaN
/// (E4M3FN); uz: 0x80 is the only NaN and there is no negative zero (FNUZ). float4 has no NaN.
struct SmallFloat {
  int ebits, mbits, bias;
  bool ieee, fn, uz;
  double max;
};

const SmallFloat* small_float(DType dt) {
  static constexpr SmallFloat kE4M3FN{4, 3, 7, false, true, false, 448.0};
  static constexpr SmallFloat kE4M3FNUZ{4, 3, 8, false, false, true, 240.0};
  static constexpr SmallFloat kE5M2{5, 2, 15, true, false, false, 57344.0};
  static constexpr SmallFloat kE5M2FNUZ{5, 2, 16, false, false, true, 57344.0};
  static constexpr SmallFloat kE2M1{2, 1, 1, false, false, false, 6.0};
  switch (dt) {
    case DType::F8E4M3FN: return &kE4M3FN;
    case DType::F8E4M3FNUZ: return &kE4M3FNUZ;
    case DType::F8E5M2: return &kE5M2;
    case DType::F8E5M2FNUZ: return &kE5M2FNUZ;
    case DType::F4E2M1: return &kE2M1;
    default: return nullptr;
  }
}

bool is_narrow(DType dt) {
  return small_float(dt) || dt == DType::I4 || dt == DType::U4 || dt == DType::U2 || dt == DType::I2 ||
         dt == DType::F8E8M0;
}
/// Bits per element of a narrow dtype: 4 and 2 are packed, lowest bits first.
int narrow_bits(DType dt) {
  if (dt == DType::I4 || dt == DType::U4 || dt == DType::F4E2M1) return 4;
  if (dt == DType::I2 || dt == DType::U2) return 2;
  return 8;
}

/// How a cast to float8 E8M0 rounds (Cast 24+ `round_mode`).
enum class E8M0Round { Up, Down, Nearest };

/// f32 -> E8M0 code, bit for bit as onnx.numpy_helper.to_float8e8m0.
uint32_t encode_e8m0(float f, bool saturate, E8M0Round mode) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t e = (bits >> 23) & 0xFFu;
  if (e == 0xFFu) return 0xFFu;  // NaN and infinities
  bool up = false;
  if (mode == E8M0Round::Up) {
    up = (bits & 0x7FFFFFu) != 0;
  } else if (mode == E8M0Round::Nearest) {
    const bool g = bits & 0x400000u, r = bits & 0x200000u, st = bits & 0x1FFFFFu, lsb = e > 0;
    up = g && (r || st || lsb);
  }
  if (up && saturate && e == 0xFEu) up = false;
  return e + (up ? 1u : 0u);
}

double decode_small(const SmallFloat& f, uint32_t code) {
  const int nbits = 1 + f.ebits + f.mbits;
  const bool neg = (code >> (nbits - 1)) & 1u;
  const uint32_t e = (code >> f.mbits) & ((1u << f.ebits) - 1u);
  const uint32_t m = code & ((1u << f.mbits) - 1u);
  const uint32_t emax = (1u << f.ebits) - 1u;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (f.uz && code == (1u << (nbits - 1))) return nan;
  if (f.fn && e == emax && m == (1u << f.mbits) - 1u) return nan;
  if (f.ieee && e == emax) return m == 0 ? (neg ? -INFINITY : INFINITY) : nan;
  const double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits)
                          : std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.mbits), static_cast<int>(e) - f.bias);
  return neg ? -v : v;
}

uint32_t encode_small(const SmallFloat& f, double x, bool saturate) {
  const int nbits = 1 + f.ebits + f.mbits;
  const uint32_t sign = std::signbit(x) ? (1u << (nbits - 1)) : 0u;
  const uint32_t max_code = [&] {  // largest finite magnitude
    const uint32_t all = (1u << (nbits - 1)) - 1u;
    if (f.fn) return all - 1u;                  // S.1111.110
    if (f.ieee) return all - ((1u << f.mbits)); // S.11110.11
    return all;
  }();
  auto nan_code = [&](bool neg) -> uint32_t {
    if (f.uz) return 1u << (nbits - 1);
    if (f.fn) return (neg ? (1u << (nbits - 1)) : 0u) | ((1u << (nbits - 1)) - 1u);
    if (f.ieee) return (neg ? (1u << (nbits - 1)) : 0u) | ((1u << (nbits - 1)) - 2u);  // S.11111.10
    return 1u << (nbits - 1);  // float4 has no NaN: ONNX's reference data gives -0
  };
  auto overflow = [&]() -> uint32_t {
    const bool has_nan = f.uz || f.fn || f.ieee;
    if (saturate || !has_nan) return sign | max_code;
    if (f.ieee) return sign | (((1u << f.ebits) - 1u) << f.mbits);  // Inf
    return nan_code(sign != 0);
  };
  if (std::isnan(x)) return nan_code(std::signbit(x));
  if (std::isinf(x)) return overflow();
  const double a = std::abs(x);
  const int emin = 1 - f.bias;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): exponent of the leading bit is e - 1
  const int q = std::max(e - 1, emin) - f.mbits;
  const double r = std::ldexp(std::nearbyint(std::ldexp(a, -q)), q);  // RNE onto the grid
  if (r > f.max) return overflow();
  if (r == 0) return f.uz ? 0u : sign;
  int er = 0;
  std::frexp(r, &er);
  uint32_t code;
  if (er - 1 < emin) {
    code = static_cast<uint32_t>(std::ldexp(r, f.bias - 1 + f.mbits));  // subnormal
  } else {
    const uint32_t m = static_cast<uint32_t>(std::ldexp(r, f.mbits - (er - 1))) - (1u << f.mbits);
    code = (static_cast<uint32_t>(er - 1 + f.bias) << f.mbits) | m;
  }
  return sign | code;
}

/// Element i of a narrow tensor as double.
double narrow_get(DType dt, const std::byte* p, int64_t i) {
  const int b = narrow_bits(dt);
  const int64_t per = 8 / b;
  const uint32_t code = (std::to_integer<uint32_t>(p[i / per]) >> (b * (i % per))) & ((1u << b) - 1u);
  switch (dt) {
    case DType::U4: case DType::U2: return code;
    case DType::I4: return code >= 8 ? static_cast<double>(code) - 16 : code;
    case DType::I2: return code >= 2 ? static_cast<double>(code) - 4 : code;
    case DType::F8E8M0:
      return code == 0xFFu ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, static_cast<int>(code) - 127);
    default: return decode_small(*small_float(dt), code);
  }
}

void narrow_set(DType dt, std::byte* p, int64_t i, double v, bool saturate, E8M0Round round) {
  const int b = narrow_bits(dt);
  const uint32_t mask = (1u << b) - 1u;
  uint32_t code;
  if (dt == DType::I4 || dt == DType::U4 || dt == DType::I2 || dt == DType::U2)
    code = static_cast<uint32_t>(ew::float_to_int<int64_t>(v)) & mask;
  else if (dt == DType::F8E8M0)
    code = encode_e8m0(static_cast<float>(v), saturate, round);
  else
    code = encode_small(*small_float(dt), v, saturate);
  const int64_t per = 8 / b;
  const int sh = b * static_cast<int>(i % per);
  p[i / per] = (p[i / per] & std::byte(~(mask << sh) & 0xFFu)) | std::byte(static_cast<uint8_t>(code << sh));
}

void cast_narrow(KernelContext& ctx, const std::string& what, const Tensor& x, DType to, bool saturate,
                 E8M0Round round) {
  if (x.dtype() == DType::String || to == DType::String)
    throw UnsupportedError(what + ": Cast between string and " + ir::dtype_name(x.dtype() == DType::String ? to : x.dtype()) +
                           " is not supported");
  Tensor& y = ctx.alloc_output(0, to, x.dims());
  const int64_t n = x.numel();
  // Source values as doubles (exact for every narrow dtype and for the integer sources used here).
  std::vector<double> v(static_cast<size_t>(n));
  if (is_narrow(x.dtype())) {
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = narrow_get(x.dtype(), x.raw(), i);
  } else {
    ir::dispatch<MCC_ALL_DTYPES>(x.dtype(), what + " (source)", [&](auto tf) {
      using From = typename decltype(tf)::type;
      const From* src = x.data<From>().data();
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = convert<double>(src[i]);
    });
  }
  if (is_narrow(to)) {
    std::byte* dst = y.mutable_raw();
    for (int64_t i = 0; i < n; ++i) narrow_set(to, dst, i, v[static_cast<size_t>(i)], saturate, round);
    return;
  }
  ir::dispatch<MCC_ALL_DTYPES>(to, what + " (target)", [&](auto tt) {
    using To = typename decltype(tt)::type;
    To* dst = y.mutable_data<To>().data();
    for (int64_t i = 0; i < n; ++i) dst[i] = convert<To>(v[static_cast<size_t>(i)]);
  });
}

// ---- the kernel

/// How a node rounds: `saturate` (float8, opset 19+), `round_mode` (float8 E8M0, opset 24+) and
/// bf16 truncation (opsets before 19).
struct CastMode {
  bool saturate = true;
  bool bf16_truncate = false;
  E8M0Round round = E8M0Round::Up;
  static CastMode of(const ir::Node& n) {
    CastMode m;
    m.saturate = n.attr_int("saturate", 1) != 0;
    const std::string rm = n.attr_string("round_mode", "up");
    if (rm == "up") m.round = E8M0Round::Up;
    else if (rm == "down") m.round = E8M0Round::Down;
    else if (rm == "nearest") m.round = E8M0Round::Nearest;
    else throw ModelError(n.describe() + ": round_mode must be 'up', 'down' or 'nearest', got '" + rm + "'");
    // Before opset 19 ONNX's reference (and its test data) made bf16 by dropping the low 16
    // bits of the f32; the spec then was silent on rounding. From 19 it rounds to nearest even.
    m.bf16_truncate = n.since_version > 0 && n.since_version < 19;
    return m;
  }
};

void cast_tensor(KernelContext& ctx, const std::string& what, const Tensor& x, DType to, CastMode mode) {
  if (x.dtype() == to) {  // no-op cast: share the buffer
    ctx.set_output(0, x);
    return;
  }
  if (is_narrow(x.dtype()) || is_narrow(to)) return cast_narrow(ctx, what, x, to, mode.saturate, mode.round);
  if (to == DType::BF16 && mode.bf16_truncate && (x.dtype() == DType::F32 || x.dtype() == DType::F64)) {
    Tensor& y = ctx.alloc_output(0, to, x.dims());
    auto dst = y.mutable_data<mcc::bf16>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float f = x.dtype() == DType::F32 ? x.data<float>()[i] : static_cast<float>(x.data<double>()[i]);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      if (std::isnan(f)) bits |= 0x00400000u;  // keep NaN a NaN once the payload is cut
      const uint16_t hi = static_cast<uint16_t>(bits >> 16);
      std::memcpy(&dst[i], &hi, 2);
    }
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
        // f32 <-> f16 in bulk (half_convert.h: the same round to nearest even as convert).
        if constexpr (std::is_same_v<From, float> && std::is_same_v<To, f16>) {
          f32_to_f16(src + b, dst + b, e - b);
        } else if constexpr (std::is_same_v<From, f16> && std::is_same_v<To, float>) {
          f16_to_f32(src + b, dst + b, e - b);
        } else {
          for (int64_t i = b; i < e; ++i) dst[i] = convert<To>(src[i]);
        }
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
    if (!ir::info(to).computable && !is_narrow(to))
      throw UnsupportedError(n.describe() + ": Cast to " + ir::dtype_name(to) + " is not supported by the cpu backend");
    return [what = ew::what(n), to, mode = CastMode::of(n)](KernelContext& ctx) { cast_tensor(ctx, what, ctx.in(0), to, mode); };
  };
}

KernelFactory cast_like_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n), mode = CastMode::of(n)](KernelContext& ctx) {
      cast_tensor(ctx, what, ctx.in(0), ctx.in(1).dtype(), mode);
    };
  };
}

}  // namespace

void register_cast_ops(KernelRegistry& r) {
  r.add("Cast", 1, 0, cast_factory());
  r.add("CastLike", 1, 0, cast_like_factory());
}

}  // namespace mcc::backends::cpu
