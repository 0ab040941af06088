// CumProd (opset 26), AffineGrid (opset 20) and Swish (opset 24) on the cpu backend. Expected
// values are worked out by hand from the ONNX operator spec examples.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::DType;

TEST_CASE_TEMPLATE("CumProd inclusive, exclusive, reverse", T, float, double, mcc::f16, int32_t,
                   int64_t, uint64_t) {
  const auto x = vec_of<T>({1, 2, 3, 4, 5});
  const auto axis = scalar<int32_t>(0);
  check_tensor(OpTest("CumProd", 26).in(x).in(axis).run1(), {5}, {1, 2, 6, 24, 120});
  check_tensor(OpTest("CumProd", 26).i("exclusive", 1).in(x).in(axis).run1(), {5},
               {1, 1, 2, 6, 24});
  check_tensor(OpTest("CumProd", 26).i("reverse", 1).in(x).in(axis).run1(), {5},
               {120, 120, 60, 20, 5});
  check_tensor(OpTest("CumProd", 26).i("reverse", 1).i("exclusive", 1).in(x).in(axis).run1(), {5},
               {120, 60, 20, 5, 1});
}

TEST_CASE("CumProd along an inner or negative axis; integers wrap") {
  const auto x = tensor<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  check_tensor(OpTest("CumProd", 26).in(x).in(scalar<int64_t>(0)).run1(), {2, 3},
               {1, 2, 3, 4, 10, 18});
  check_tensor(OpTest("CumProd", 26).in(x).in(scalar<int32_t>(-1)).run1(), {2, 3},
               {1, 2, 6, 4, 20, 120});
  // int8: 16 * 16 = 256 wraps to 0; -2 * 100 = -200 wraps to 56.
  check_tensor(OpTest("CumProd", 26).in(vec<int8_t>({16, 16})).in(scalar<int64_t>(0)).run1(), {2},
               {16, 0});
  check_tensor(OpTest("CumProd", 26).in(vec<int8_t>({-2, 100})).in(scalar<int64_t>(0)).run1(), {2},
               {-2, 56});
  CHECK_THROWS_AS(OpTest("CumProd", 26).in(x).in(scalar<int64_t>(2)).run1(), ModelError);
  CHECK_THROWS_AS(OpTest("CumProd", 26).in(scalar<float>(1)).in(scalar<int64_t>(0)).run1(),
                  ModelError);
}

TEST_CASE_TEMPLATE("AffineGrid 2D identity and translation", T, float, double, mcc::f16) {
  const auto id = tensor_of<T>({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  const auto size = vec<int64_t>({1, 1, 2, 3});
  // align_corners=0: x at (2i+1)/3 - 1 = -2/3, 0, 2/3; y at -1/2, 1/2.
  const double t = 2.0 / 3.0;
  check_tensor(OpTest("AffineGrid", 20).in(id).in(size).run1(), {1, 2, 3, 2},
               {-t, -0.5, 0, -0.5, t, -0.5, -t, 0.5, 0, 0.5, t, 0.5});
  // align_corners=1: x at -1, 0, 1; y at -1, 1. theta maps (x, y) to (2x + 1, y - 1).
  const auto th = tensor_of<T>({1, 2, 3}, {2, 0, 1, 0, 1, -1});
  check_tensor(OpTest("AffineGrid", 20).i("align_corners", 1).in(th).in(size).run1(), {1, 2, 3, 2},
               {-1, -2, 1, -2, 3, -2, -1, 0, 1, 0, 3, 0});
}

TEST_CASE("AffineGrid 3D and bad shapes") {
  const auto id = tensor<float>({1, 3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  // D=2, H=1, W=2 with align_corners=1: z at -1, 1; y at -1 (a size of 1); x at -1, 1.
  check_tensor(OpTest("AffineGrid", 20)
                   .i("align_corners", 1)
                   .in(id)
                   .in(vec<int64_t>({1, 1, 2, 1, 2}))
                   .run1(),
               {1, 2, 1, 2, 3}, {-1, -1, -1, 1, -1, -1, -1, -1, 1, 1, -1, 1});
  CHECK_THROWS_AS(OpTest("AffineGrid", 20).in(id).in(vec<int64_t>({1, 1, 2, 3})).run1(),
                  ModelError);
  CHECK_THROWS_AS(OpTest("AffineGrid", 20).in(id).in(vec<int64_t>({1, 1, 2})).run1(), ModelError);
}

TEST_CASE_TEMPLATE("Swish is x * sigmoid(alpha * x)", T, float, double, mcc::f16, mcc::bf16) {
  auto sw = [](double x, double a) { return x / (1.0 + std::exp(-a * x)); };
  check_tensor(OpTest("Swish", 24).in(vec_of<T>({3, 4, -1, 0})).run1(), {4},
               {sw(3, 1), sw(4, 1), sw(-1, 1), 0});
  check_tensor(OpTest("Swish", 24).f("alpha", 0.5f).in(vec_of<T>({2, -2})).run1(), {2},
               {sw(2, 0.5), sw(-2, 0.5)});
}

TEST_CASE("Swish rejects integer input") {
  CHECK_THROWS_AS(OpTest("Swish", 24).in(vec<int32_t>({1})).run1(), UnsupportedError);
}
