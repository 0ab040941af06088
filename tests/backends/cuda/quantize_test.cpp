// The cuda backend's QuantizeLinear / DequantizeLinear against the cpu: per-tensor and per-axis
// scales and zero points, u8 / i8 / u16 / i16 (and i32 dequantization), f32 and f16, ties that
// round half to even, saturation, NaN, empty tensors, and what stays on the cpu.
#include <doctest/doctest.h>

#include <cmath>

#include "backends/cuda/cuda_test_util.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_test;

namespace {

/// Values that hit ties, saturation and NaN once divided by 0.5 or 2.
ir::Tensor tricky_x(ir::DType dt, std::vector<int64_t> dims) {
  const int64_t n = ir::checked_numel(dims);
  const double specials[] = {1.25, -1.25, 0.75, -0.75, 5.0, 1e6, -1e6, 63.75, -64.25, NAN, 0.0, 33000.0};
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i < 12 ? specials[i] : (i % 17) * 0.37 - 3;
  if (dt == ir::DType::F16)
    for (auto& x : v) x = std::isnan(x) || std::fabs(x) < 6e4 ? x : 6e4 * (x > 0 ? 1 : -1);
  if (dt == ir::DType::I32)
    for (auto& x : v) x = std::isnan(x) ? 7 : std::round(x);
  ir::Tensor out;
  ir::dispatch<ir::DType::F32, ir::DType::F16, ir::DType::I32>(dt, "tricky_x", [&](auto tag) {
    out = tensor_of<typename decltype(tag)::type>(dims, v);
  });
  return out;
}

template <class T>
ir::Tensor q_values(std::vector<int64_t> dims, int lo, int hi) {
  const int64_t n = ir::checked_numel(dims);
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<T>(lo + (i * 37) % (hi - lo + 1));
  return tensor<T>(std::move(dims), v);
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda QuantizeLinear: per-tensor, ties to even, saturation, NaN") {
    for (ir::DType xt : {ir::DType::F32, ir::DType::I32}) {
      const ir::Tensor x = tricky_x(xt, {3, 7});
      INFO("x " << ir::dtype_name(xt));
      check_on_cuda(OpTest("QuantizeLinear", 13).in(x).in(scalar<float>(0.5f)).in(scalar<uint8_t>(128)), "QuantizeLinear");
      check_on_cuda(OpTest("QuantizeLinear", 13).in(x).in(scalar<float>(0.5f)).in(scalar<int8_t>(-3)), "QuantizeLinear");
      check_on_cuda(OpTest("QuantizeLinear", 13).in(x).in(vec<float>({2.f})), "QuantizeLinear");
      check_on_cuda(OpTest("QuantizeLinear", 10).in(x).in(scalar<float>(0.25f)).in(scalar<uint8_t>(0)), "QuantizeLinear");
    }
    const ir::Tensor x = tricky_x(ir::DType::F32, {3, 7});
    check_on_cuda(OpTest("QuantizeLinear", 21).in(x).in(scalar<float>(0.5f)).in(scalar<int16_t>(-7)), "QuantizeLinear");
    check_on_cuda(OpTest("QuantizeLinear", 21).in(x).in(scalar<float>(0.01f)).in(scalar<uint16_t>(30000)), "QuantizeLinear");
    check_on_cuda(OpTest("QuantizeLinear", 21).i("output_dtype", 3).in(x).in(scalar<float>(0.5f)), "QuantizeLinear");
    check_on_cuda(OpTest("QuantizeLinear", 13).in(tricky_x(ir::DType::F32, {0, 3})).in(scalar<float>(0.5f)), "QuantizeLinear");
  }

  TEST_CASE("cuda QuantizeLinear: f16 input and scale, per-axis scales") {
    const ir::Tensor xh = tricky_x(ir::DType::F16, {2, 5, 3});
    check_on_cuda(OpTest("QuantizeLinear", 19).in(xh).in(scalar<f16>(f16(0.5f))).in(scalar<int8_t>(1)), "QuantizeLinear");
    check_on_cuda(OpTest("QuantizeLinear", 21).in(xh).in(scalar<float>(0.5f)).in(scalar<uint8_t>(9)), "QuantizeLinear");
    const ir::Tensor x = tricky_x(ir::DType::F32, {2, 5, 3});
    check_on_cuda(OpTest("QuantizeLinear", 13).in(x).in(vec<float>({0.5f, 1, 2, 0.25f, 4})).in(vec<uint8_t>({0, 10, 128, 250, 3})),
                  "QuantizeLinear");
    check_on_cuda(OpTest("QuantizeLinear", 13).i("axis", -1).in(x).in(vec<float>({0.5f, 1, 2})).in(vec<int8_t>({-1, 0, 5})),
                  "QuantizeLinear");
    check_on_cuda(OpTest("QuantizeLinear", 13).i("axis", 0).in(x).in(vec<float>({0.5f, 3})), "QuantizeLinear");
    check_on_cuda(OpTest("QuantizeLinear", 19).in(xh).in(tensor<f16>({5}, {0.5, 1, 2, 0.25, 4})).in(vec<int8_t>({1, 2, 3, 4, 5})),
                  "QuantizeLinear");
  }

  TEST_CASE("cuda DequantizeLinear: per-tensor and per-axis, every integer type, f16 scales") {
    check_on_cuda(OpTest("DequantizeLinear", 13).in(q_values<uint8_t>({4, 5}, 0, 255)).in(scalar<float>(0.1f)).in(scalar<uint8_t>(128)),
                  "DequantizeLinear");
    check_on_cuda(OpTest("DequantizeLinear", 10).in(q_values<int8_t>({4, 5}, -128, 127)).in(scalar<float>(0.3f)).in(scalar<int8_t>(-5)),
                  "DequantizeLinear");
    check_on_cuda(OpTest("DequantizeLinear", 13).in(q_values<int32_t>({7}, -100000, 100000)).in(scalar<float>(0.001f)),
                  "DequantizeLinear");
    check_on_cuda(OpTest("DequantizeLinear", 21).in(q_values<int16_t>({3, 3}, -32768, 32767)).in(scalar<float>(2.f)).in(scalar<int16_t>(4)),
                  "DequantizeLinear");
    check_on_cuda(OpTest("DequantizeLinear", 21).in(q_values<uint16_t>({3, 3}, 0, 65535)).in(scalar<float>(0.5f)),
                  "DequantizeLinear");
    check_on_cuda(OpTest("DequantizeLinear", 19).in(q_values<uint8_t>({2, 3, 4}, 0, 255)).in(scalar<f16>(f16(0.125f))).in(scalar<uint8_t>(7)),
                  "DequantizeLinear");
    check_on_cuda(OpTest("DequantizeLinear", 13).in(q_values<int8_t>({2, 3, 4}, -128, 127)).in(vec<float>({0.1f, 0.2f, 0.3f})).in(vec<int8_t>({0, -1, 1})),
                  "DequantizeLinear");
    check_on_cuda(OpTest("DequantizeLinear", 13).i("axis", -1).in(q_values<uint8_t>({2, 3, 4}, 0, 255)).in(vec<float>({1, 2, 3, 4})),
                  "DequantizeLinear");
    check_on_cuda(OpTest("DequantizeLinear", 19).i("axis", 0).in(q_values<uint8_t>({2, 3}, 0, 255)).in(tensor<f16>({2}, {0.5, 0.25})),
                  "DequantizeLinear");
    check_on_cuda(OpTest("DequantizeLinear", 13).in(q_values<uint8_t>({0, 4}, 0, 255)).in(scalar<float>(0.1f)), "DequantizeLinear");
  }

  TEST_CASE("cuda QuantizeLinear / DequantizeLinear decline blocked scales and narrow types") {
    const ir::Tensor x = tricky_x(ir::DType::F32, {2, 4});
    check_declined(OpTest("QuantizeLinear", 21).i("block_size", 2).i("axis", 1).in(x).in(tensor<float>({2, 2}, {1, 2, 3, 4})));
    check_declined(OpTest("QuantizeLinear", 21).i("output_dtype", 21).in(x).in(scalar<float>(1.f)));  // u4
    check_declined(OpTest("QuantizeLinear", 21).i("output_dtype", 17).in(x).in(scalar<float>(1.f)));  // f8e4m3fn
    CHECK(!support_of("DequantizeLinear", 21, {ir::DType::I4, ir::DType::F32}).ok);
    CHECK(!support_of("DequantizeLinear", 21, {ir::DType::F8E5M2, ir::DType::F32}).ok);
    CHECK(!support_of("DequantizeLinear", 21, {ir::DType::U8, ir::DType::BF16}).ok);
    CHECK(!support_of("QuantizeLinear", 21, {ir::DType::BF16, ir::DType::BF16}).ok);
    CHECK(support_of("DequantizeLinear", 21, {ir::DType::U8, ir::DType::F16, ir::DType::U8}).ok);
  }
}
