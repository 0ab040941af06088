// Resize and Upsample on the cpu backend. Expected values come from the ONNX operator spec
// examples or are worked out by hand here.
#include <doctest/doctest.h>

#include <cmath>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;

namespace {
const std::vector<float> k2x2 = {1, 2, 3, 4};
}

TEST_CASE("Resize nearest upsampling by scales (spec example)") {
  auto y = OpTest("Resize", 13).s("mode", "nearest").in(tensor<float>({1, 1, 2, 2}, k2x2)).none()
               .in(vec<float>({1, 1, 2, 3})).run1();
  check_tensor(y, {1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
}

TEST_CASE("Resize nearest downsampling and the nearest_mode variants") {
  std::vector<float> x(8);
  for (int k = 0; k < 8; ++k) x[k] = static_cast<float>(k + 1);
  auto y = OpTest("Resize", 13).in(tensor<float>({1, 1, 2, 4}, x)).none().in(vec<float>({1, 1, 0.6f, 0.6f})).run1();
  check_tensor(y, {1, 1, 1, 2}, {1, 3});
  // asymmetric, 1-D 4 -> 3: x_ori = 0, 4/3, 8/3.
  const auto v = tensor<int32_t>({4}, {10, 20, 30, 40});
  auto run = [&](const char* mode) {
    return OpTest("Resize", 13).s("coordinate_transformation_mode", "asymmetric").s("nearest_mode", mode)
        .in(v).none().none().in(vec<int64_t>({3})).run1();
  };
  check_tensor(run("floor"), {3}, {10, 20, 30});
  check_tensor(run("ceil"), {3}, {10, 30, 40});
  check_tensor(run("round_prefer_floor"), {3}, {10, 20, 40});
  CHECK(run("round_prefer_ceil").dtype() == ir::DType::I32);
}

TEST_CASE("Resize linear with half_pixel and align_corners (spec examples)") {
  const auto x = tensor<float>({1, 1, 2, 2}, k2x2);
  auto y = OpTest("Resize", 13).s("mode", "linear").in(x).none().in(vec<float>({1, 1, 2, 2})).run1();
  check_tensor(y, {1, 1, 4, 4}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  y = OpTest("Resize", 13).s("mode", "linear").s("coordinate_transformation_mode", "align_corners").in(x).none()
          .in(vec<float>({1, 1, 2, 2})).run1();
  const double t = 1.0 / 3;
  check_tensor(y, {1, 1, 4, 4}, {1, 1 + t, 1 + 2 * t, 2, 1 + 2 * t, 2, 2 + t, 2 + 2 * t,
                                 2 + t, 2 + 2 * t, 3, 3 + t, 3, 3 + t, 3 + 2 * t, 4});
}

TEST_CASE("Resize linear on uint8 rounds and on f16 keeps its dtype") {
  auto y = OpTest("Resize", 13).s("mode", "linear").s("coordinate_transformation_mode", "align_corners")
               .in(tensor<uint8_t>({2}, {0, 255})).none().none().in(vec<int64_t>({4})).run1();
  CHECK(y.dtype() == ir::DType::U8);
  check_tensor(y, {4}, {0, 85, 170, 255});
  y = OpTest("Resize", 13).s("mode", "linear").in(tensor<mcc::f16>({1, 1, 2, 2}, {mcc::f16(1.f), mcc::f16(2.f), mcc::f16(3.f), mcc::f16(4.f)}))
          .none().in(vec<float>({1, 1, 2, 2})).run1();
  CHECK(y.dtype() == ir::DType::F16);
  check_tensor(y, {1, 1, 4, 4}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}, Tol{1e-3, 1e-3});
}

TEST_CASE("Resize cubic reproduces a linear ramp away from the borders") {
  // Cubic convolution interpolates polynomials of degree <= 1 exactly where no clamping happens.
  std::vector<float> ramp(8);
  for (int k = 0; k < 8; ++k) ramp[k] = static_cast<float>(2 * k);
  auto y = OpTest("Resize", 13).s("mode", "cubic").s("coordinate_transformation_mode", "asymmetric")
               .in(tensor<float>({8}, ramp)).none().in(vec<float>({2})).run1();
  REQUIRE(y.numel() == 16);
  const auto v = values(y);
  for (int o = 2; o < 12; ++o) CHECK(v[o] == doctest::Approx(o).epsilon(1e-6));
}

TEST_CASE("Resize linear along an outer axis (separable passes)") {
  // align_corners, axis 0 from 2 to 3 rows: x_ori = 0, 0.5, 1.
  auto y = OpTest("Resize", 13).s("mode", "linear").s("coordinate_transformation_mode", "align_corners")
               .in(tensor<float>({2, 2, 1}, {1, 2, 5, 6})).none().none().in(vec<int64_t>({3, 2, 1})).run1();
  check_tensor(y, {3, 2, 1}, {1, 2, 3, 4, 5, 6});
  // Same through axes (opset 18) on a double input, cubic with exclude_outside at the identity.
  y = OpTest("Resize", 18).s("mode", "cubic").i("exclude_outside", 1).is("axes", {0})
          .in(tensor<double>({2, 2, 1}, {1, 2, 5, 6})).none().in(vec<float>({1})).run1();
  check_tensor(y, {2, 2, 1}, {1, 2, 5, 6});
}

TEST_CASE("Resize-18 sizes with axes and keep_aspect_ratio_policy") {
  const auto x = tensor<float>({1, 1, 2, 2}, k2x2);
  auto y = OpTest("Resize", 18).is("axes", {3, 2}).in(x).none().none().in(vec<int64_t>({4, 2})).run1();
  check_tensor(y, {1, 1, 2, 4}, {1, 1, 2, 2, 3, 3, 4, 4});
  // not_larger: scale = min(7/2, 4/2) = 2 on both axes.
  y = OpTest("Resize", 18).s("keep_aspect_ratio_policy", "not_larger").is("axes", {2, 3}).in(x).none().none()
          .in(vec<int64_t>({7, 4})).run1();
  CHECK(y.dims() == std::vector<int64_t>{1, 1, 4, 4});
  y = OpTest("Resize", 18).s("keep_aspect_ratio_policy", "not_smaller").is("axes", {2, 3}).in(x).none().none()
          .in(vec<int64_t>({7, 4})).run1();
  CHECK(y.dims() == std::vector<int64_t>{1, 1, 7, 7});
}

TEST_CASE("Resize tf_crop_and_resize fills outside the roi with extrapolation_value") {
  // roi [0, 2] on a 1-D axis of 3 samples: x_ori = 0, 2, 4 -> the last is outside.
  auto y = OpTest("Resize", 13).s("mode", "linear").s("coordinate_transformation_mode", "tf_crop_and_resize")
               .f("extrapolation_value", -1.f).in(tensor<float>({3}, {1, 2, 3})).in(vec<float>({0, 2})).none()
               .in(vec<int64_t>({3})).run1();
  check_tensor(y, {3}, {1, 3, -1});
}

TEST_CASE("Resize nearest 2x on NCHW matches a direct gather") {
  const int64_t n = 2, c = 3, h = 5, w = 7;
  std::vector<float> x(n * c * h * w);
  for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(k);
  auto y = OpTest("Resize", 13).s("coordinate_transformation_mode", "asymmetric").s("nearest_mode", "floor")
               .in(tensor<float>({n, c, h, w}, x)).none().in(vec<float>({1, 1, 2, 2})).run1();
  std::vector<double> want;
  for (int64_t a = 0; a < n * c; ++a)
    for (int64_t i = 0; i < 2 * h; ++i)
      for (int64_t j = 0; j < 2 * w; ++j) want.push_back(x[(a * h + i / 2) * w + j / 2]);
  check_tensor(y, {n, c, 2 * h, 2 * w}, want);
}

TEST_CASE("Upsample-7 (scales attribute) and Upsample-9 (scales input)") {
  auto y = OpTest("Upsample", 7).fs("scales", {1, 1, 2, 3}).in(tensor<float>({1, 1, 2, 2}, k2x2)).run1();
  check_tensor(y, {1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  y = OpTest("Upsample", 9).in(tensor<int64_t>({2}, {5, 6})).in(vec<float>({2})).run1();
  check_tensor(y, {4}, {5, 5, 6, 6});
  y = OpTest("Upsample", 9).s("mode", "linear").in(tensor<float>({2}, {0, 4})).in(vec<float>({2})).run1();
  check_tensor(y, {4}, {0, 2, 4, 4});
}

TEST_CASE("Resize rejects bad attributes and inconsistent inputs") {
  const auto x = tensor<float>({1, 1, 2, 2}, k2x2);
  CHECK_THROWS_AS(OpTest("Resize", 13).s("mode", "bicubic").in(x).none().in(vec<float>({1, 1, 2, 2})).run(), ModelError);
  CHECK_THROWS_AS(OpTest("Resize", 13).in(x).none().in(vec<float>({1, 1, 2, 2})).in(vec<int64_t>({1, 1, 4, 4})).run(), ModelError);
  CHECK_THROWS_AS(OpTest("Resize", 13).in(x).none().in(vec<float>({2, 2})).run(), ModelError);
  CHECK_THROWS_AS(OpTest("Resize", 13).in(x).none().in(vec<float>({1, 1, -2, 2})).run(), ModelError);
}
