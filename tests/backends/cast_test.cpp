// Cast and CastLike between numeric dtypes, bool and strings. Expected values are worked out by
// hand from the ONNX Cast spec (truncation toward zero, round-to-nearest-even for narrower
// floats, numpy's string forms).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::DType;

namespace {
ir::Tensor cast(const ir::Tensor& x, DType to, int opset = 13) {
  return OpTest("Cast", opset).in(x).i("to", static_cast<int64_t>(to)).run1();
}
uint16_t bits_of(mcc::bf16 v) {
  uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}
}  // namespace

TEST_CASE("Cast float to integers truncates toward zero; integers wrap") {
  const auto x = vec<float>({-2.7f, -0.5f, 0.5f, 2.7f, 300.0f});
  ir::Tensor i32 = cast(x, DType::I32);
  CHECK(i32.dtype() == DType::I32);
  CHECK(values(i32) == std::vector<double>{-2, 0, 0, 2, 300});
  CHECK(values(cast(x, DType::I8)) == std::vector<double>{-2, 0, 0, 2, 44});  // 300 wraps like numpy
  CHECK(values(cast(vec<int32_t>({-1, 256, 257}), DType::U8)) == std::vector<double>{255, 0, 1});
  CHECK(values(cast(vec<int64_t>({-1}), DType::U64)) == std::vector<double>{18446744073709551615.0});
  // NaN and out-of-range values are defined (no UB): they go through INT64_MIN.
  CHECK(values(cast(vec_of<double>({std::nan(""), 1e300}), DType::I64)) ==
        std::vector<double>{-9223372036854775808.0, -9223372036854775808.0});
}

TEST_CASE_TEMPLATE("Cast between float widths rounds to nearest even", T, mcc::f16, mcc::bf16, double) {
  const auto x = vec<float>({1.0f, 0.1f, -3.5f, 65504.0f});
  ir::Tensor y = cast(x, ir::dtype_of<T>());
  CHECK(y.dtype() == ir::dtype_of<T>());
  CHECK(close(values(y), {1.0, 0.1, -3.5, 65504.0}, tol_for(ir::dtype_of<T>()).rtol));
  ir::Tensor back = cast(y, DType::F32);
  CHECK(back.dtype() == DType::F32);
  CHECK(close(values(back), values(y), 0, 0));
}

TEST_CASE("Cast f32 to bf16 rounds to nearest even from opset 19 and truncates before") {
  // 0x3F808000 is exactly halfway between bf16 0x3F80 and 0x3F81: ties go to even (0x3F80);
  // 0x3F818000 ties up to 0x3F82; 0x3F80C000 rounds up to 0x3F81.
  const uint32_t in_bits[] = {0x3F808000u, 0x3F818000u, 0x3F80C000u};
  std::vector<float> in;
  for (uint32_t b : in_bits) {
    float f;
    std::memcpy(&f, &b, 4);
    in.push_back(f);
  }
  ir::Tensor y = cast(vec<float>(in), DType::BF16, 19);
  auto d = y.data<mcc::bf16>();
  CHECK(bits_of(d[0]) == 0x3F80);
  CHECK(bits_of(d[1]) == 0x3F82);
  CHECK(bits_of(d[2]) == 0x3F81);
  // Opsets 13-18: the low 16 bits are dropped (ONNX's reference data for those opsets).
  ir::Tensor t = cast(vec<float>(in), DType::BF16, 13);
  auto e = t.data<mcc::bf16>();
  CHECK(bits_of(e[0]) == 0x3F80);
  CHECK(bits_of(e[1]) == 0x3F81);
  CHECK(bits_of(e[2]) == 0x3F80);
  CHECK(std::isnan(static_cast<float>(cast(vec_of<float>({std::nan("")}), DType::BF16, 13).data<mcc::bf16>()[0])));
}

TEST_CASE("Cast to and from bool") {
  CHECK(values(cast(vec_of<float>({0.0, -0.0, 0.1, std::nan("")}), DType::Bool)) == std::vector<double>{0, 0, 1, 1});
  CHECK(values(cast(vec<bool>({true, false}), DType::F16)) == std::vector<double>{1, 0});
  CHECK(values(cast(vec<bool>({true, false}), DType::I64)) == std::vector<double>{1, 0});
}

TEST_CASE("Cast numbers to strings as numpy's str() prints them") {
  ir::Tensor s = cast(vec<float>({0.9767611f, 0.039187793f, 1.0f, -2.5f, 1e-5f, 123456789.0f, 1e16f}), DType::String);
  CHECK(s.dtype() == DType::String);
  CHECK(s.strings() == std::vector<std::string>{"0.9767611", "0.039187793", "1.0", "-2.5", "1e-05", "123456790.0", "1e+16"});
  CHECK(cast(vec_of<float>({std::nan(""), -INFINITY, 0.0}), DType::String).strings() ==
        std::vector<std::string>{"nan", "-inf", "0.0"});
  CHECK(cast(vec<int64_t>({-7, 42}), DType::String).strings() == std::vector<std::string>{"-7", "42"});
  CHECK(cast(vec<bool>({true, false}), DType::String).strings() == std::vector<std::string>{"True", "False"});
  CHECK(cast(vec<double>({0.1}), DType::String).strings() == std::vector<std::string>{"0.1"});
}

TEST_CASE("Cast strings to numbers, including NaN and infinities") {
  const auto s = ir::Tensor::from_strings({5}, {"0.47892547", "-3", "NaN", "INF", "-INF"});
  const auto f = values(cast(s, DType::F32));
  CHECK(f[0] == static_cast<double>(0.47892547f));
  CHECK(f[1] == -3.0);
  CHECK(std::isnan(f[2]));
  CHECK(f[3] == std::numeric_limits<double>::infinity());
  CHECK(f[4] == -std::numeric_limits<double>::infinity());
  CHECK(values(cast(ir::Tensor::from_strings({3}, {"12", "-5", "7.9"}), DType::I32)) == std::vector<double>{12, -5, 7});
  CHECK(values(cast(ir::Tensor::from_strings({2}, {"1.5", "2"}), DType::F64)) == std::vector<double>{1.5, 2});
  CHECK_THROWS_AS(cast(ir::Tensor::from_strings({1}, {"abc"}), DType::F32), ModelError);
}

TEST_CASE("Cast opset 1 takes the target as a type name; CastLike takes it from an input") {
  ir::Tensor y = OpTest("Cast", 1).in(vec<float>({1.5f})).s("to", "INT32").run1();
  CHECK(y.dtype() == DType::I32);
  CHECK(values(y) == std::vector<double>{1});
  ir::Tensor z = OpTest("CastLike", 15).in(vec<double>({2.25, -1})).in(vec<mcc::f16>({})).run1();
  CHECK(z.dtype() == DType::F16);
  CHECK(values(z) == std::vector<double>{2.25, -1});
  ir::Tensor same = OpTest("CastLike", 15).in(vec<float>({3})).in(vec<float>({0})).run1();
  CHECK(values(same) == std::vector<double>{3});
}

TEST_CASE("Cast to an unsupported or unknown target is reported") {
  CHECK_THROWS_AS(cast(vec<float>({1}), static_cast<DType>(27), 25), UnsupportedError);  // float6e2m3
  CHECK_THROWS_AS(OpTest("Cast", 1).in(vec<float>({1})).s("to", "QUATERNION").run1(), ModelError);
  CHECK_THROWS_AS(OpTest("Cast", 13).in(vec<float>({1})).run1(), ModelError);
}

namespace {
std::vector<int> raw_bytes(const ir::Tensor& t) {
  std::vector<int> out;
  for (std::byte b : t.bytes()) out.push_back(std::to_integer<int>(b));
  return out;
}
}  // namespace

TEST_CASE("Cast to float8 rounds to nearest even and follows the saturate tables") {
  const auto x = vec_of<float>({0.47892547, 1e6, 1e-7, -0.0, std::nan(""), -INFINITY, 0.3125});
  // E4M3FN: 0.47892547 -> 0.46875 = 1.875 * 2^-2 (0x2F); 1e6 saturates to 448 (0x7E); NaN 0x7F; -inf -> -448.
  // 0.3125 = 1.25 * 2^-2 is exact (0x2A).
  ir::Tensor y = cast(x, DType::F8E4M3FN, 19);
  CHECK(y.dtype() == DType::F8E4M3FN);
  CHECK(raw_bytes(y) == std::vector<int>{0x2F, 0x7E, 0x00, 0x80, 0x7F, 0xFE, 0x2A});
  ir::Tensor ns = OpTest("Cast", 19).in(x).i("to", static_cast<int64_t>(DType::F8E4M3FN)).i("saturate", 0).run1();
  CHECK(raw_bytes(ns) == std::vector<int>{0x2F, 0x7F, 0x00, 0x80, 0x7F, 0xFF, 0x2A});
  // E5M2 without saturation keeps infinities; FNUZ has no negative zero and one NaN (0x80).
  ir::Tensor e5 = OpTest("Cast", 19).in(x).i("to", static_cast<int64_t>(DType::F8E5M2)).i("saturate", 0).run1();
  CHECK(raw_bytes(e5)[1] == 0x7C);
  CHECK(raw_bytes(e5)[5] == 0xFC);
  ir::Tensor uz = cast(x, DType::F8E4M3FNUZ, 19);
  CHECK(raw_bytes(uz)[3] == 0x00);
  CHECK(raw_bytes(uz)[4] == 0x80);
  // Decoding back is exact.
  CHECK(values(cast(y, DType::F32, 19)).at(1) == 448.0);
  CHECK(close(values(cast(y, DType::F32, 19)), {0.46875, 448, 0, 0, std::nan(""), -448, 0.3125}, 0, 0));
}

TEST_CASE("Cast to int4/uint4 wraps modulo 16 and packs two values per byte, low nibble first") {
  ir::Tensor y = cast(vec<float>({-9, -8, 7, 1, 15}), DType::I4, 21);
  CHECK(y.dtype() == DType::I4);
  CHECK(raw_bytes(y) == std::vector<int>{0x87, 0x17, 0x0F});
  CHECK(values(cast(y, DType::I8, 21)) == std::vector<double>{7, -8, 7, 1, -1});
  ir::Tensor u = cast(vec<int32_t>({-9, 3}), DType::U4, 21);
  CHECK(values(cast(u, DType::F32, 21)) == std::vector<double>{7, 3});
  CHECK_THROWS_AS(cast(ir::Tensor::from_strings({1}, {"1"}), DType::I4, 21), UnsupportedError);
}

TEST_CASE("Cast f64 to f16 rounds once (no double rounding through f32)") {
  // 1 + 2^-11 + 2^-40 lies just above the f16 tie between 1 and 1 + 2^-10: it must round up,
  // although its nearest f32 (1 + 2^-11) is the tie itself and would round to even (1.0).
  const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  CHECK(values(cast(vec<double>({d, 1.0 + std::ldexp(1.0, -11)}), DType::F16)) ==
        std::vector<double>{1.0 + std::ldexp(1.0, -10), 1.0});
  CHECK(values(cast(vec<double>({1e300, -1e300}), DType::F16)) ==
        std::vector<double>{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()});
}
