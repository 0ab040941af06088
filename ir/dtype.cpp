// DType traits table and name parsing.
#include "ir/dtype.h"

#include <array>

namespace mcc::ir {
namespace {
constexpr std::array<DTypeInfo, 27> kInfo{{
    {"undefined", 0, false, false, false, false},
    {"f32", 32, true, false, true, true},
    {"u8", 8, false, true, false, true},
    {"i8", 8, false, true, true, true},
    {"u16", 16, false, true, false, true},
    {"i16", 16, false, true, true, true},
    {"i32", 32, false, true, true, true},
    {"i64", 64, false, true, true, true},
    {"string", 0, false, false, false, true},
    {"bool", 8, false, false, false, true},
    {"f16", 16, true, false, true, true},
    {"f64", 64, true, false, true, true},
    {"u32", 32, false, true, false, true},
    {"u64", 64, false, true, false, true},
    {"c64", 64, false, false, true, false},
    {"c128", 128, false, false, true, false},
    {"bf16", 16, true, false, true, true},
    {"f8e4m3fn", 8, true, false, true, false},
    {"f8e4m3fnuz", 8, true, false, true, false},
    {"f8e5m2", 8, true, false, true, false},
    {"f8e5m2fnuz", 8, true, false, true, false},
    {"u4", 4, false, true, false, false},
    {"i4", 4, false, true, true, false},
    {"f4e2m1", 4, true, false, true, false},
    {"f8e8m0", 8, true, false, false, false},  // exponent only: 2^(code-127), 0xFF is NaN
    {"u2", 2, false, true, false, false},
    {"i2", 2, false, true, true, false},
}};
const DTypeInfo kUnknown{"unknown", 0, false, false, false, false};
}  // namespace

const DTypeInfo& info(DType dt) {
  const auto i = static_cast<int32_t>(dt);
  if (i < 0 || i >= static_cast<int32_t>(kInfo.size())) return kUnknown;
  return kInfo[static_cast<size_t>(i)];
}

std::string dtype_name(DType dt) {
  const auto& inf = info(dt);
  if (&inf == &kUnknown) return "dtype<" + std::to_string(static_cast<int32_t>(dt)) + ">";
  return std::string(inf.name);
}

size_t dtype_size(DType dt) {
  const int bits = info(dt).bits;
  return bits <= 8 ? (bits == 0 ? 0 : 1) : static_cast<size_t>(bits / 8);
}

DType parse_dtype(std::string_view s) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == s) return static_cast<DType>(i);
  struct Alias { std::string_view name; DType dt; };
  static constexpr Alias kAliases[] = {
      {"float", DType::F32},   {"float32", DType::F32}, {"float16", DType::F16},
      {"half", DType::F16},    {"bfloat16", DType::BF16}, {"double", DType::F64},
      {"float64", DType::F64}, {"int8", DType::I8},     {"uint8", DType::U8},
      {"int16", DType::I16},   {"uint16", DType::U16},  {"int32", DType::I32},
      {"uint32", DType::U32},  {"int64", DType::I64},   {"uint64", DType::U64}};
  for (const auto& a : kAliases)
    if (a.name == s) return a.dt;
  throw UsageError("unknown dtype '" + std::string(s) + "' (use f32, f16, bf16, i8, u8, i32, i64, ...)");
}

std::string join_dtype_names(std::initializer_list<DType> dts) {
  std::string out;
  for (DType d : dts) {
    if (!out.empty()) out += ", ";
    out += dtype_name(d);
  }
  return out;
}

}  // namespace mcc::ir
