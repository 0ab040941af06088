// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: the ONNX operator-spec examples,
// per-axis and blocked scales, f16 scales, 4-bit packing and float8 encodings.
#include <doctest/doctest.h>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;

namespace {

std::vector<RValue> run_q(const std::string& op, const std::vector<ir::Tensor>& ins, int n_out,
                          const std::vector<ir::Attribute>& attrs = {}, int opset = 21) {
  OpTest t(op, opset);
  for (const auto& x : ins) t.in(x);  // an undefined tensor is an omitted input
  return t.outs(n_out).attrs(attrs).run_values();
}

std::vector<int> raw_bytes(const ir::Tensor& t) {
  std::vector<int> v;
  for (std::byte b : t.bytes()) v.push_back(static_cast<int>(b));
  return v;
}

}  // namespace

TEST_CASE("QuantizeLinear u8 per-tensor: round half to even and saturation (spec example)") {
  auto r = run_q("QuantizeLinear",
                 {tensor<float>({6}, {0.f, 2.f, 3.f, 1000.f, -254.f, -1000.f}), ir::Tensor::scalar<float>(2.f),
                  ir::Tensor::scalar<uint8_t>(128)},
                 1, {}, 13);
  CHECK(r[0].tensor.dtype() == ir::DType::U8);
  CHECK(values(r[0].tensor) == std::vector<double>{128, 129, 130, 255, 1, 0});
  // No zero point: uint8 with zero point 0; 0.5 and 2.5 round to even.
  auto q = run_q("QuantizeLinear", {tensor<float>({3}, {0.5f, 2.5f, -3.f}), ir::Tensor::scalar<float>(1.f)}, 1, {}, 10);
  CHECK(values(q[0].tensor) == std::vector<double>{0, 2, 0});
}

TEST_CASE("QuantizeLinear i8 per-axis and f16 input") {
  auto r = run_q("QuantizeLinear",
                 {tensor<float>({2, 2}, {1.f, -1.f, 10.f, -300.f}), tensor<float>({2}, {0.5f, 2.f}),
                  tensor<int8_t>({2}, {0, 1})},
                 1, {attr_i("axis", 0)});
  CHECK(values(r[0].tensor) == std::vector<double>{2, -2, 6, -128});
  auto h = run_q("QuantizeLinear", {tensor<f16>({2}, {f16(1.5f), f16(-7.f)}), ir::Tensor::scalar<f16>(f16(0.5f)),
                                     ir::Tensor::scalar<int8_t>(0)},
                 1);
  CHECK(values(h[0].tensor) == std::vector<double>{3, -14});
}

TEST_CASE("QuantizeLinear blocked scales, int16 output") {
  // x [2, 4], axis 1, block 2: scale [2, 2].
  auto r = run_q("QuantizeLinear",
                 {tensor<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), tensor<float>({2, 2}, {1, 2, 0.5f, 4}),
                  tensor<int16_t>({2, 2}, {0, 0, 0, 100})},
                 1, {attr_i("axis", 1), attr_i("block_size", 2)});
  CHECK(r[0].tensor.dtype() == ir::DType::I16);
  CHECK(values(r[0].tensor) == std::vector<double>{1, 2, 2, 2, 10, 12, 102, 102});
}

TEST_CASE("DequantizeLinear u8, per-axis i8, i32 and f16 scale") {
  auto r = run_q("DequantizeLinear",
                 {tensor<uint8_t>({4}, {0, 3, 128, 255}), ir::Tensor::scalar<float>(2.f), ir::Tensor::scalar<uint8_t>(128)}, 1,
                 {}, 10);
  CHECK(values(r[0].tensor) == std::vector<double>{-256, -250, 0, 254});
  auto a = run_q("DequantizeLinear",
                 {tensor<int8_t>({1, 2, 2}, {-1, 2, 3, -4}), tensor<float>({2}, {0.5f, 2.f}), tensor<int8_t>({2}, {1, 0})},
                 1, {}, 13);
  CHECK(values(a[0].tensor) == std::vector<double>{-1, 0.5, 6, -8});
  auto i = run_q("DequantizeLinear", {tensor<int32_t>({2}, {-1000, 7}), ir::Tensor::scalar<float>(0.25f)}, 1);
  CHECK(values(i[0].tensor) == std::vector<double>{-250, 1.75});
  auto h = run_q("DequantizeLinear", {tensor<uint8_t>({2}, {10, 20}), ir::Tensor::scalar<f16>(f16(0.5f))}, 1);
  CHECK(h[0].tensor.dtype() == ir::DType::F16);
  CHECK(values(h[0].tensor) == std::vector<double>{5, 10});
}

TEST_CASE("int4 outputs are packed two per byte, low nibble first, and dequantize back") {
  ir::Tensor zp = ir::Tensor::allocate(ir::DType::I4, {});
  auto q = run_q("QuantizeLinear", {tensor<float>({3}, {-8.f, 7.f, 100.f}), ir::Tensor::scalar<float>(1.f), zp}, 1);
  CHECK(q[0].tensor.dtype() == ir::DType::I4);
  CHECK(raw_bytes(q[0].tensor) == std::vector<int>{0x78, 0x07});
  auto d = run_q("DequantizeLinear", {q[0].tensor, ir::Tensor::scalar<float>(2.f)}, 1);
  CHECK(values(d[0].tensor) == std::vector<double>{-16, 14, 14});
}

TEST_CASE("float8 encodings: e4m3fn saturation and NaN, e5m2 infinity") {
  ir::Tensor e4 = ir::Tensor::allocate(ir::DType::F8E4M3FN, {});
  const ir::Tensor x = tensor<float>({4}, {1.f, 448.f, 1000.f, -0.5f});
  auto s = run_q("QuantizeLinear", {x, ir::Tensor::scalar<float>(1.f), e4}, 1);
  CHECK(raw_bytes(s[0].tensor) == std::vector<int>{0x38, 0x7E, 0x7E, 0xB0});
  auto ns = run_q("QuantizeLinear", {x, ir::Tensor::scalar<float>(1.f), e4}, 1, {attr_i("saturate", 0)});
  CHECK(raw_bytes(ns[0].tensor)[2] == 0x7F);
  ir::Tensor e5 = ir::Tensor::allocate(ir::DType::F8E5M2, {});
  auto e = run_q("QuantizeLinear", {tensor<float>({2}, {1.f, 1e6f}), ir::Tensor::scalar<float>(1.f), e5}, 1,
                 {attr_i("saturate", 0)});
  CHECK(raw_bytes(e[0].tensor) == std::vector<int>{0x3C, 0x7C});
  auto d = run_q("DequantizeLinear", {s[0].tensor, ir::Tensor::scalar<float>(2.f)}, 1);
  CHECK(values(d[0].tensor) == std::vector<double>{2, 896, 896, -1});
}

TEST_CASE("DynamicQuantizeLinear (spec example)") {
  auto r = run_q("DynamicQuantizeLinear", {tensor<float>({6}, {0.f, 2.f, -3.f, -2.5f, 1.34f, 0.5f})}, 3, {}, 11);
  CHECK(values(r[0].tensor) == std::vector<double>{153, 255, 0, 26, 221, 179});
  CHECK(close(values(r[1].tensor), {0.0196078438}, 1e-6, 1e-9));
  CHECK(values(r[2].tensor) == std::vector<double>{153});
}

TEST_CASE("Quantization rejects bad scales and dtypes") {
  CHECK_THROWS_AS(run_q("QuantizeLinear", {tensor<float>({2, 3}, std::vector<float>(6, 1.f)), tensor<float>({2}, {1.f, 1.f})},
                        1, {attr_i("axis", 1)}),
                  ModelError);
  CHECK_THROWS_AS(run_q("QuantizeLinear", {tensor<float>({2}, {1.f, 2.f}), ir::Tensor::scalar<float>(1.f),
                                            ir::Tensor::scalar<float>(0.f)},
                        1),
                  UnsupportedError);
  CHECK_THROWS_AS(run_q("DequantizeLinear", {tensor<uint8_t>({2}, {1, 2}), ir::Tensor::scalar<float>(1.f),
                                              ir::Tensor::scalar<int8_t>(0)},
                        1),
                  ModelError);
  CHECK_THROWS_AS(run_q("DynamicQuantizeLinear", {tensor<double>({1}, {1.0})}, 3, {}, 11), UnsupportedError);
}
