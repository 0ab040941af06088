// int2/uint2 and float8 E8M0 (ONNX 1.18+ dtypes) through Cast, CastLike, QuantizeLinear and
// DequantizeLinear, and BitCast. Expected bytes are worked out by hand from the ONNX spec: 2-bit
// values pack four per byte, lowest bits first; E8M0 holds 2^(code-127).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::DType;

namespace {
ir::Tensor cast(const ir::Tensor& x, DType to, int opset = 25) {
  return OpTest("Cast", opset).in(x).i("to", static_cast<int64_t>(to)).run1();
}
std::vector<int> raw_bytes(const ir::Tensor& t) {
  std::vector<int> out;
  for (std::byte b : t.bytes()) out.push_back(std::to_integer<int>(b));
  return out;
}
ir::Tensor packed(DType dt, std::vector<int64_t> dims, const std::vector<uint8_t>& bytes) {
  ir::Tensor t = ir::Tensor::allocate(dt, std::move(dims));
  REQUIRE(t.nbytes() == bytes.size());
  std::memcpy(t.mutable_raw(), bytes.data(), bytes.size());
  return t;
}
}  // namespace

TEST_CASE("dtype table knows f8e8m0, u2 and i2 as storage-only types") {
  CHECK(ir::dtype_name(DType::F8E8M0) == "f8e8m0");
  CHECK(ir::info(DType::U2).bits == 2);
  CHECK(ir::info(DType::I2).is_signed);
  CHECK_FALSE(ir::info(DType::I2).computable);
  CHECK(ir::parse_dtype("u2") == DType::U2);
  CHECK(ir::Tensor::allocate(DType::I2, {5}).nbytes() == 2);  // four per byte, rounded up
  CHECK(ir::dtype_name(static_cast<DType>(27)) == "dtype<27>");
}

TEST_CASE("Cast to int2/uint2 wraps modulo 4 and packs four values per byte") {
  // -3..3 wrap to 1, 2, 3, 0, 1, 2, 3 (two's complement for int2: 1, -2, -1, 0, 1, -2, -1).
  const auto x = vec<float>({-3, -2, -1, 0, 1, 2, 3});
  ir::Tensor i2 = cast(x, DType::I2);
  CHECK(i2.dtype() == DType::I2);
  CHECK(raw_bytes(i2) == std::vector<int>{0x39, 0x39});
  CHECK(values(cast(i2, DType::F32)) == std::vector<double>{1, -2, -1, 0, 1, -2, -1});
  CHECK(values(cast(i2, DType::I8)) == std::vector<double>{1, -2, -1, 0, 1, -2, -1});
  ir::Tensor u2 = cast(vec_of<mcc::f16>({-3, -2, -1, 0, 1, 2, 3}), DType::U2);
  CHECK(raw_bytes(u2) == std::vector<int>{0x39, 0x39});
  CHECK(values(cast(u2, DType::U8)) == std::vector<double>{1, 2, 3, 0, 1, 2, 3});
  ir::Tensor like =
      OpTest("CastLike", 25).in(vec<float>({1, 2})).in(packed(DType::U2, {1}, {0})).run1();
  CHECK(like.dtype() == DType::U2);
  CHECK(raw_bytes(like) == std::vector<int>{0x09});
  CHECK_THROWS_AS(cast(ir::Tensor::from_strings({1}, {"1"}), DType::I2), UnsupportedError);
}

TEST_CASE("Cast to float8 E8M0 follows round_mode and saturate on the f32 bits") {
  const auto x = vec<float>({0.0f, 0.124f, 0.25f, 0.5f, 1.1f, 2.0f, 4.0f, 8.0f});
  // round up (default): 0.124 = 1.984 * 2^-4 -> 2^-3 (0x7C); 1.1 -> 2^1 (0x80); exact powers keep
  // their exponent; 0 -> code 0 (2^-127).
  ir::Tensor up = cast(x, DType::F8E8M0);
  CHECK(up.dtype() == DType::F8E8M0);
  CHECK(raw_bytes(up) == std::vector<int>{0x00, 0x7C, 0x7D, 0x7E, 0x80, 0x80, 0x81, 0x82});
  ir::Tensor down = OpTest("Cast", 25).in(x).i("to", 24).s("round_mode", "down").run1();
  CHECK(raw_bytes(down) == std::vector<int>{0x00, 0x7B, 0x7D, 0x7E, 0x7F, 0x80, 0x81, 0x82});
  // nearest: 1.984 * 2^-4 rounds up, 1.1 * 2^0 down; 1.5 * 2^0 (guard bit only, lsb set) up.
  ir::Tensor near = OpTest("Cast", 25)
                        .in(vec<float>({0.124f, 1.1f, 1.5f}))
                        .i("to", 24)
                        .s("round_mode", "nearest")
                        .run1();
  CHECK(raw_bytes(near) == std::vector<int>{0x7C, 0x7F, 0x80});
  // NaN/inf -> 0xFF; the largest exponent saturates unless saturate=0.
  const auto big = vec<float>({NAN, INFINITY, 3.0e38f});
  CHECK(raw_bytes(cast(big, DType::F8E8M0)) == std::vector<int>{0xFF, 0xFF, 0xFE});
  CHECK(raw_bytes(OpTest("Cast", 25).in(big).i("to", 24).i("saturate", 0).run1()) ==
        std::vector<int>{0xFF, 0xFF, 0xFF});
  // Decoding: 2^(code-127), 0xFF is NaN.
  const auto back = values(cast(packed(DType::F8E8M0, {4}, {0x7F, 0x80, 0x00, 0xFF}), DType::F32));
  CHECK(back[0] == 1.0);
  CHECK(back[1] == 2.0);
  CHECK(back[2] == std::ldexp(1.0, -127));
  CHECK(std::isnan(back[3]));
  CHECK(values(cast(packed(DType::F8E8M0, {1}, {0x7D}), DType::F16)) == std::vector<double>{0.25});
  CHECK_THROWS_AS(OpTest("Cast", 25).in(x).i("to", 24).s("round_mode", "sideways").run1(),
                  ModelError);
}

TEST_CASE("QuantizeLinear and DequantizeLinear with int2/uint2") {
  // Per-axis scales 2, 3, 4 on rows; zero point 0; results saturate to [-2, 1].
  const auto x = tensor<float>({3, 2}, {0, 2.5, 3, -9, 4, -4.1});
  ir::Tensor zp = ir::Tensor::allocate(DType::I2, {3});
  ir::Tensor q =
      OpTest("QuantizeLinear", 25).i("axis", 0).in(x).in(vec<float>({2, 3, 4})).in(zp).run1();
  CHECK(q.dtype() == DType::I2);
  // 0/2 = 0; 2.5/2 = 1.25 -> 1; 3/3 = 1; -9/3 = -3 -> -2; 4/4 = 1; -4.1/4 = -1.025 -> -1.
  CHECK(values(cast(q, DType::I8)) == std::vector<double>{0, 1, 1, -2, 1, -1});
  // uint2 with zero point 1: x = [0, 1, 2, 3] -> (x - 1) * 2.
  ir::Tensor xu = packed(DType::U2, {4}, {0xE4});  // 0, 1, 2, 3
  ir::Tensor zu = packed(DType::U2, {1}, {0x01});
  check_tensor(
      OpTest("DequantizeLinear", 25).i("axis", 0).in(xu).in(scalar<float>(2)).in(zu).run1(), {4},
      {-2, 0, 2, 4});
  ir::Tensor qu = OpTest("QuantizeLinear", 25)
                      .in(vec<float>({-2, 0, 2, 9}))
                      .in(scalar<float>(2))
                      .in(packed(DType::U2, {}, {1}))
                      .run1();
  CHECK(raw_bytes(qu) == std::vector<int>{0xE4});
}

TEST_CASE("BitCast reinterprets bytes between dtypes of one width") {
  ir::Tensor y = OpTest("BitCast", 26)
                     .in(vec<float>({1.0f, -2.5f}))
                     .i("to", static_cast<int64_t>(DType::I32))
                     .run1();
  CHECK(y.dtype() == DType::I32);
  CHECK(values(y) == std::vector<double>{1065353216, -1071644672});
  ir::Tensor d = OpTest("BitCast", 26)
                     .in(vec<int64_t>({4607182418800017408}))
                     .i("to", static_cast<int64_t>(DType::F64))
                     .run1();
  CHECK(values(d) == std::vector<double>{1.0});
  ir::Tensor u = OpTest("BitCast", 26)
                     .in(tensor<int8_t>({2, 2}, {-1, -128, 127, 0}))
                     .i("to", static_cast<int64_t>(DType::U8))
                     .run1();
  check_tensor(u, {2, 2}, {255, 128, 127, 0});
  ir::Tensor h = OpTest("BitCast", 26)
                     .in(scalar<uint16_t>(0x3C00))
                     .i("to", static_cast<int64_t>(DType::F16))
                     .run1();
  CHECK(h.dims().empty());
  CHECK(values(h) == std::vector<double>{1.0});
  ir::Tensor b = OpTest("BitCast", 26)
                     .in(vec<uint8_t>({0, 1, 7}))
                     .i("to", static_cast<int64_t>(DType::Bool))
                     .run1();
  CHECK(values(b) == std::vector<double>{0, 1, 1});
  ir::Tensor f8 = OpTest("BitCast", 26)
                      .in(vec<uint8_t>({0x7F}))
                      .i("to", static_cast<int64_t>(DType::F8E8M0))
                      .run1();
  CHECK(values(cast(f8, DType::F32)) == std::vector<double>{1.0});
}

TEST_CASE("BitCast rejects width mismatches, strings and a missing 'to'") {
  CHECK_THROWS_AS(
      OpTest("BitCast", 26).in(vec<float>({1})).i("to", static_cast<int64_t>(DType::I64)).run1(),
      ModelError);
  CHECK_THROWS_AS(
      OpTest("BitCast", 26).in(vec<float>({1})).i("to", static_cast<int64_t>(DType::String)).run1(),
      ModelError);
  CHECK_THROWS_AS(OpTest("BitCast", 26).in(ir::Tensor::from_strings({1}, {"a"})).i("to", 2).run1(),
                  ModelError);
  CHECK_THROWS_AS(OpTest("BitCast", 26).in(vec<float>({1})).run1(), ModelError);
  CHECK_THROWS_AS(OpTest("BitCast", 26).in(vec<float>({1})).i("to", 99).run1(), UnsupportedError);
}
