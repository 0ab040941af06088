// Reductions, softmax family, ArgMax/ArgMin/TopK and CumSum on the cpu backend. Expected values
// come from the ONNX operator spec examples or are worked out by hand here.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;

namespace {
const std::vector<float> kSpec3x2x2 = {5, 1, 20, 2, 30, 1, 40, 2, 55, 1, 60, 2};  // ReduceMean spec data
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

// ---------------------------------------------------------------- reductions

TEST_CASE("ReduceSum-13 takes axes as an input, keepdims and noop_with_empty_axes") {
  std::vector<float> x(12);
  for (int k = 0; k < 12; ++k) x[k] = static_cast<float>(k + 1);
  auto y = OpTest("ReduceSum", 13).in(tensor<float>({3, 2, 2}, x)).in(vec<int64_t>({1})).run1();
  check_tensor(y, {3, 1, 2}, {4, 6, 12, 14, 20, 22});

  y = OpTest("ReduceSum", 13).i("keepdims", 0).in(tensor<float>({3, 2, 2}, x)).in(vec<int64_t>({-2})).run1();
  check_tensor(y, {3, 2}, {4, 6, 12, 14, 20, 22});

  // Empty axes reduce everything, unless noop_with_empty_axes=1.
  y = OpTest("ReduceSum", 13).in(tensor<float>({3, 2, 2}, x)).in(vec<int64_t>({})).run1();
  check_tensor(y, {1, 1, 1}, {78});
  y = OpTest("ReduceSum", 13).i("noop_with_empty_axes", 1).in(tensor<float>({3, 2, 2}, x)).in(vec<int64_t>({})).run1();
  check_tensor(y, {3, 2, 2}, std::vector<double>(x.begin(), x.end()));
  y = OpTest("ReduceSum", 13).i("keepdims", 0).in(tensor<float>({3, 2, 2}, x)).run1();
  check_tensor(y, {}, {78});
}

TEST_CASE("ReduceSum-11 takes axes as an attribute and reduces non-adjacent axes") {
  std::vector<int32_t> x(24);
  for (int k = 0; k < 24; ++k) x[k] = k;
  auto y = OpTest("ReduceSum", 11).is("axes", {0, 2}).i("keepdims", 0).in(tensor<int32_t>({2, 3, 4}, x)).run1();
  std::vector<double> want(3, 0);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) want[b] += x[a * 12 + b * 4 + c];
  CHECK(y.dtype() == ir::DType::I32);
  check_tensor(y, {3}, want);
}

TEST_CASE("ReduceMean matches the spec example (attribute axes and input axes)") {
  auto y = OpTest("ReduceMean", 13).is("axes", {1}).i("keepdims", 0).in(tensor<float>({3, 2, 2}, kSpec3x2x2)).run1();
  check_tensor(y, {3, 2}, {12.5, 1.5, 35, 1.5, 57.5, 1.5});
  y = OpTest("ReduceMean", 18).in(tensor<float>({3, 2, 2}, kSpec3x2x2)).in(vec<int64_t>({1})).run1();
  check_tensor(y, {3, 1, 2}, {12.5, 1.5, 35, 1.5, 57.5, 1.5});
  y = OpTest("ReduceMean", 18).in(tensor<double>({3, 2, 2}, {5, 1, 20, 2, 30, 1, 40, 2, 55, 1, 60, 2})).run1();
  check_tensor(y, {1, 1, 1}, {18.25});
}

TEST_CASE("ReduceProd, L1, L2, LogSum, LogSumExp and SumSquare along the last axis") {
  const auto x = tensor<float>({2, 2}, {1, 2, 3, 4});
  auto run = [&](const char* op) { return OpTest(op, 18).i("keepdims", 0).in(x).in(vec<int64_t>({1})).run1(); };
  check_tensor(run("ReduceProd"), {2}, {2, 12});
  check_tensor(run("ReduceL1"), {2}, {3, 7});
  check_tensor(run("ReduceL2"), {2}, {std::sqrt(5.0), 5});
  check_tensor(run("ReduceLogSum"), {2}, {std::log(3.0), std::log(7.0)});
  check_tensor(run("ReduceLogSumExp"), {2}, {std::log(std::exp(1.0) + std::exp(2.0)), std::log(std::exp(3.0) + std::exp(4.0))});
  check_tensor(run("ReduceSumSquare"), {2}, {5, 25});
  // LogSumExp stays finite for large inputs.
  auto big = OpTest("ReduceLogSumExp", 18).i("keepdims", 0).in(tensor<float>({2}, {1000, 1000})).run1();
  check_tensor(big, {}, {1000 + std::log(2.0)}, Tol{1e-5, 1e-3});
}

TEST_CASE("ReduceMax and ReduceMin on integer, f16 and bool inputs") {
  auto y = OpTest("ReduceMax", 18).i("keepdims", 0).in(tensor<int32_t>({2, 3}, {1, -7, 3, -4, -5, -6})).in(vec<int64_t>({1})).run1();
  CHECK(y.dtype() == ir::DType::I32);
  check_tensor(y, {2}, {3, -4});
  y = OpTest("ReduceMin", 13).is("axes", {0}).in(tensor<uint8_t>({2, 2}, {9, 2, 3, 200})).run1();
  check_tensor(y, {1, 2}, {3, 2});
  y = OpTest("ReduceMax", 18).in(tensor<mcc::f16>({3}, {mcc::f16(0.5f), mcc::f16(-2.f), mcc::f16(1.25f)})).run1();
  CHECK(y.dtype() == ir::DType::F16);
  check_tensor(y, {1}, {1.25});
  y = OpTest("ReduceMax", 20).in(bools({2, 2}, {1, 0, 0, 0})).in(vec<int64_t>({1})).run1();
  CHECK(y.dtype() == ir::DType::Bool);
  check_tensor(y, {2, 1}, {1, 0});
  y = OpTest("ReduceMin", 20).in(bools({2, 2}, {1, 1, 1, 0})).in(vec<int64_t>({1})).run1();
  check_tensor(y, {2, 1}, {1, 0});
}

TEST_CASE("ReduceSum on f16 and bf16 accumulates in wide precision") {
  std::vector<mcc::f16> h(1000, mcc::f16(0.1f));
  auto y = OpTest("ReduceSum", 13).i("keepdims", 0).in(tensor<mcc::f16>({1000}, h)).run1();
  check_tensor(y, {}, {1000 * static_cast<double>(static_cast<float>(mcc::f16(0.1f)))}, Tol{1e-3, 0});
  std::vector<mcc::bf16> b = {mcc::bf16(1.f), mcc::bf16(2.f), mcc::bf16(3.f), mcc::bf16(4.f)};
  y = OpTest("ReduceSumSquare", 13).is("axes", {1}).in(tensor<mcc::bf16>({2, 2}, b)).run1();
  CHECK(y.dtype() == ir::DType::BF16);
  check_tensor(y, {2, 1}, {5, 25});
}

TEST_CASE("reductions over an empty set give the identity of the operation") {
  const auto x = tensor<float>({2, 0, 3}, {});
  auto run = [&](const char* op) { return OpTest(op, 18).in(x).in(vec<int64_t>({1})).run1(); };
  check_tensor(run("ReduceSum"), {2, 1, 3}, std::vector<double>(6, 0.0));
  check_tensor(run("ReduceProd"), {2, 1, 3}, std::vector<double>(6, 1.0));
  check_tensor(run("ReduceMax"), {2, 1, 3}, std::vector<double>(6, -kInf));
  check_tensor(run("ReduceMin"), {2, 1, 3}, std::vector<double>(6, kInf));
  check_tensor(run("ReduceLogSumExp"), {2, 1, 3}, std::vector<double>(6, -kInf));
  check_tensor(run("ReduceL2"), {2, 1, 3}, std::vector<double>(6, 0.0));
  // A zero-sized kept axis gives an empty output.
  auto y = OpTest("ReduceSum", 13).in(x).in(vec<int64_t>({2})).run1();
  CHECK(y.dims() == std::vector<int64_t>{2, 0, 1});
}

TEST_CASE("reductions reject out-of-range axes and unsupported dtypes") {
  const auto x = tensor<float>({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_AS(OpTest("ReduceSum", 13).in(x).in(vec<int64_t>({2})).run(), ModelError);
  CHECK_THROWS_AS(OpTest("ReduceMean", 11).is("axes", {-3}).in(x).run(), ModelError);
  CHECK_THROWS_AS(OpTest("ReduceSum", 13).in(bools({2}, {1, 0})).run(), UnsupportedError);
}

// ---------------------------------------------------------------- softmax family

TEST_CASE("Softmax and LogSoftmax match the spec example and are stable for large inputs") {
  auto y = OpTest("Softmax", 13).in(tensor<float>({1, 3}, {-1, 0, 1})).run1();
  check_tensor(y, {1, 3}, {0.09003057, 0.24472847, 0.66524096});
  y = OpTest("LogSoftmax", 13).in(tensor<float>({1, 3}, {-1, 0, 1})).run1();
  check_tensor(y, {1, 3}, {-2.40760596, -1.40760596, -0.40760596});
  y = OpTest("Softmax", 13).in(tensor<float>({1, 3}, {1000, 1001, 1002})).run1();
  check_tensor(y, {1, 3}, {0.09003057, 0.24472847, 0.66524096});
  y = OpTest("Softmax", 13).in(tensor<mcc::f16>({3}, {mcc::f16(-1.f), mcc::f16(0.f), mcc::f16(1.f)})).run1();
  CHECK(y.dtype() == ir::DType::F16);
  check_tensor(y, {3}, {0.09003057, 0.24472847, 0.66524096}, Tol{1e-3, 1e-3});
}

TEST_CASE("Softmax before opset 13 flattens at axis; from 13 it uses a single axis") {
  const auto x = tensor<float>({2, 2}, {0, 0, 0, std::log(3.f)});
  // Opset 11, axis=0: the whole tensor is one row.
  auto y = OpTest("Softmax", 11).i("axis", 0).in(x).run1();
  check_tensor(y, {2, 2}, {1.0 / 6, 1.0 / 6, 1.0 / 6, 3.0 / 6});
  // Opset 13, axis=0: per column.
  y = OpTest("Softmax", 13).i("axis", 0).in(x).run1();
  check_tensor(y, {2, 2}, {0.5, 0.25, 0.5, 0.75});
  // Opset 11 default axis=1 on a 3-D input: rows of 4 elements.
  y = OpTest("LogSoftmax", 11).in(tensor<float>({1, 2, 2}, {0, 0, 0, 0})).run1();
  check_tensor(y, {1, 2, 2}, std::vector<double>(4, -std::log(4.0)));
  CHECK_THROWS_AS(OpTest("Softmax", 13).i("axis", 2).in(x).run(), ModelError);
}

TEST_CASE("Hardmax puts one 1 at the first maximum") {
  auto y = OpTest("Hardmax", 13).in(tensor<float>({2, 4}, {3, 0, 1, 2, 2, 5, 5, 0})).run1();
  check_tensor(y, {2, 4}, {1, 0, 0, 0, 0, 1, 0, 0});
  y = OpTest("Hardmax", 11).i("axis", 0).in(tensor<float>({2, 2}, {1, 2, 3, 0})).run1();
  check_tensor(y, {2, 2}, {0, 0, 1, 0});
}

// ---------------------------------------------------------------- ArgMax / ArgMin / TopK

TEST_CASE("ArgMax and ArgMin with keepdims and select_last_index") {
  const auto x = tensor<float>({2, 2}, {2, 2, 3, 10});
  auto y = OpTest("ArgMax", 13).i("axis", 1).in(x).run1();
  CHECK(y.dtype() == ir::DType::I64);
  check_tensor(y, {2, 1}, {0, 1});
  y = OpTest("ArgMax", 13).i("axis", 1).i("select_last_index", 1).in(x).run1();
  check_tensor(y, {2, 1}, {1, 1});
  y = OpTest("ArgMin", 13).i("keepdims", 0).in(x).run1();
  check_tensor(y, {2}, {0, 0});
  y = OpTest("ArgMin", 12).i("axis", -1).i("keepdims", 0).i("select_last_index", 1).in(tensor<int64_t>({2, 3}, {4, 1, 1, 0, 0, 9})).run1();
  check_tensor(y, {2}, {2, 1});
  CHECK_THROWS_AS(OpTest("ArgMax", 13).i("axis", 2).in(x).run(), ModelError);
}

TEST_CASE("TopK returns largest or smallest values, ties in index order") {
  std::vector<float> x(12);
  for (int k = 0; k < 12; ++k) x[k] = static_cast<float>(k);
  auto r = OpTest("TopK", 11).outs(2).in(tensor<float>({3, 4}, x)).in(vec<int64_t>({3})).run();
  check_tensor(r[0], {3, 3}, {3, 2, 1, 7, 6, 5, 11, 10, 9});
  check_tensor(r[1], {3, 3}, {3, 2, 1, 3, 2, 1, 3, 2, 1});
  r = OpTest("TopK", 11).outs(2).i("largest", 0).i("axis", 0).in(tensor<float>({3, 4}, x)).in(vec<int64_t>({2})).run();
  check_tensor(r[0], {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  // Ties: equal values come out in ascending index order.
  r = OpTest("TopK", 11).outs(2).in(tensor<int32_t>({5}, {1, 3, 3, 1, 3})).in(vec<int64_t>({4})).run();
  check_tensor(r[0], {4}, {3, 3, 3, 1});
  check_tensor(r[1], {4}, {1, 2, 4, 0});
  // TopK-1: k is an attribute.
  r = OpTest("TopK", 1).outs(2).i("k", 1).in(tensor<mcc::f16>({2, 2}, {mcc::f16(1.f), mcc::f16(4.f), mcc::f16(-1.f), mcc::f16(-3.f)})).run();
  check_tensor(r[0], {2, 1}, {4, -1});
  check_tensor(r[1], {2, 1}, {1, 0});
  CHECK_THROWS_AS(OpTest("TopK", 11).outs(2).in(tensor<float>({3}, {1, 2, 3})).in(vec<int64_t>({4})).run(), ModelError);
}

// ---------------------------------------------------------------- CumSum

TEST_CASE("CumSum exclusive and reverse") {
  const auto x = tensor<float>({5}, {1, 2, 3, 4, 5});
  const auto axis = tensor<int32_t>({}, {0});
  check_tensor(OpTest("CumSum", 14).in(x).in(axis).run1(), {5}, {1, 3, 6, 10, 15});
  check_tensor(OpTest("CumSum", 14).i("exclusive", 1).in(x).in(axis).run1(), {5}, {0, 1, 3, 6, 10});
  check_tensor(OpTest("CumSum", 14).i("reverse", 1).in(x).in(axis).run1(), {5}, {15, 14, 12, 9, 5});
  check_tensor(OpTest("CumSum", 14).i("reverse", 1).i("exclusive", 1).in(x).in(axis).run1(), {5}, {14, 12, 9, 5, 0});
  const auto m = tensor<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  check_tensor(OpTest("CumSum", 11).in(m).in(tensor<int64_t>({}, {0})).run1(), {2, 3}, {1, 2, 3, 5, 7, 9});
  check_tensor(OpTest("CumSum", 11).in(m).in(tensor<int64_t>({}, {-1})).run1(), {2, 3}, {1, 3, 6, 4, 9, 15});
  CHECK_THROWS_AS(OpTest("CumSum", 11).in(m).in(tensor<int64_t>({}, {2})).run(), ModelError);
}
