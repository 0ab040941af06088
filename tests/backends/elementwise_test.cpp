// Elementwise kernels: unary math/activations, binary ops with broadcasting, variadic folds,
// Where and Clip. Expected values come from the ONNX operator spec examples or are worked out
// by hand in the test.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::DType;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

// ---------------------------------------------------------------- unary

TEST_CASE_TEMPLATE("Relu, Sigmoid, Tanh and Exp match reference values", T, float, double, mcc::f16, mcc::bf16) {
  const auto x = vec_of<T>({-2, -0.5, 0, 0.5, 2});
  const double rt = tol_for(ir::dtype_of<T>()).rtol;
  ir::Tensor y = OpTest("Relu", 14).in(x).run1();
  CHECK(y.dtype() == ir::dtype_of<T>());
  CHECK(close(values(y), {0, 0, 0, 0.5, 2}, rt));
  std::vector<double> sig, th, ex;
  for (double v : {-2.0, -0.5, 0.0, 0.5, 2.0}) {
    sig.push_back(1 / (1 + std::exp(-v)));
    th.push_back(std::tanh(v));
    ex.push_back(std::exp(v));
  }
  CHECK(close(values(OpTest("Sigmoid", 13).in(x).run1()), sig, rt, 1e-6));
  CHECK(close(values(OpTest("Tanh", 13).in(x).run1()), th, rt, 1e-6));
  CHECK(close(values(OpTest("Exp", 13).in(x).run1()), ex, rt, 1e-6));
}

TEST_CASE("Round rounds half to even; Floor, Ceil, Sqrt, Log, Reciprocal") {
  CHECK(values(OpTest("Round", 11).in(vec<float>({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f, -2.4f})).run1()) ==
        std::vector<double>{0, 2, 2, -0, -2, 3, -2});
  CHECK(values(OpTest("Floor", 13).in(vec<float>({-1.5f, 1.2f, 2.0f})).run1()) == std::vector<double>{-2, 1, 2});
  CHECK(values(OpTest("Ceil", 13).in(vec<float>({-1.5f, 1.2f, 2.0f})).run1()) == std::vector<double>{-1, 2, 2});
  CHECK(close(values(OpTest("Sqrt", 13).in(vec<float>({4, 9, 2})).run1()), {2, 3, std::sqrt(2.0)}));
  CHECK(close(values(OpTest("Log", 13).in(vec<float>({1, 10})).run1()), {0, std::log(10.0)}));
  CHECK(close(values(OpTest("Reciprocal", 13).in(vec<float>({-4, 2})).run1()), {-0.25, 0.5}));
}

TEST_CASE("trigonometric and hyperbolic functions and Erf") {
  const std::vector<double> v{-0.5, 0.0, 0.25, 0.75};
  struct Fn { const char* op; double (*f)(double); };
  const Fn fns[] = {{"Sin", std::sin},   {"Cos", std::cos},     {"Tan", std::tan},     {"Asin", std::asin},
                    {"Acos", std::acos}, {"Atan", std::atan},   {"Sinh", std::sinh},   {"Cosh", std::cosh},
                    {"Asinh", std::asinh}, {"Atanh", std::atanh}, {"Erf", std::erf}};
  for (const auto& fn : fns) {
    std::vector<double> want;
    for (double x : v) want.push_back(fn.f(x));
    INFO(fn.op);
    CHECK(close(values(OpTest(fn.op, 13).in(vec_of<float>(v)).run1()), want, 1e-5, 1e-6));
  }
  CHECK(close(values(OpTest("Acosh", 13).in(vec<float>({1.0f, 2.0f})).run1()), {0.0, std::acosh(2.0)}));
}

TEST_CASE("Abs, Neg and Sign on integers wrap instead of overflowing") {
  ir::Tensor a = OpTest("Abs", 13).in(vec<int8_t>({-128, -5, 0, 7})).run1();
  CHECK(a.dtype() == DType::I8);
  CHECK(values(a) == std::vector<double>{-128, 5, 0, 7});  // two's complement, as numpy
  CHECK(values(OpTest("Neg", 13).in(vec<int32_t>({-3, 0, 4})).run1()) == std::vector<double>{3, 0, -4});
  CHECK(values(OpTest("Sign", 13).in(vec<int64_t>({-9, 0, 3})).run1()) == std::vector<double>{-1, 0, 1});
  CHECK(values(OpTest("Sign", 13).in(vec<uint8_t>({0, 9})).run1()) == std::vector<double>{0, 1});
  CHECK(values(OpTest("Sign", 13).in(vec<float>({-0.5f, 0.0f, 2.0f})).run1()) == std::vector<double>{-1, 0, 1});
  CHECK(values(OpTest("Relu", 14).in(vec<int16_t>({-3, 5})).run1()) == std::vector<double>{0, 5});
  CHECK_THROWS_AS(OpTest("Neg", 13).in(vec<uint8_t>({1})).run1(), UnsupportedError);
}

TEST_CASE("IsNaN, IsInf with detect attributes, Not, BitwiseNot") {
  const auto x = vec_of<float>({-kInf, kNaN, 1.0, kInf});
  ir::Tensor n = OpTest("IsNaN", 13).in(x).run1();
  CHECK(n.dtype() == DType::Bool);
  CHECK(values(n) == std::vector<double>{0, 1, 0, 0});
  CHECK(values(OpTest("IsNaN", 20).in(vec_of<mcc::f16>({kNaN, 2.0})).run1()) == std::vector<double>{1, 0});
  CHECK(values(OpTest("IsInf", 10).in(x).run1()) == std::vector<double>{1, 0, 0, 1});
  CHECK(values(OpTest("IsInf", 10).in(x).i("detect_negative", 0).run1()) == std::vector<double>{0, 0, 0, 1});
  CHECK(values(OpTest("IsInf", 10).in(x).i("detect_positive", 0).run1()) == std::vector<double>{1, 0, 0, 0});
  CHECK(values(OpTest("Not", 1).in(vec<bool>({true, false})).run1()) == std::vector<double>{0, 1});
  CHECK(values(OpTest("BitwiseNot", 18).in(vec<uint8_t>({0, 0x0f})).run1()) == std::vector<double>{255, 240});
  CHECK(values(OpTest("BitwiseNot", 18).in(vec<int32_t>({0, 5})).run1()) == std::vector<double>{-1, -6});
}

TEST_CASE("activations with attributes follow the spec formulas") {
  const std::vector<double> v{-3, -1, -0.25, 0, 0.25, 1, 3};
  auto want = [&](auto f) { std::vector<double> w; for (double x : v) w.push_back(f(x)); return w; };
  const auto x = vec_of<float>(v);
  CHECK(close(values(OpTest("LeakyRelu", 16).in(x).f("alpha", 0.1f).run1()), want([](double t) { return t < 0 ? 0.1 * t : t; })));
  CHECK(close(values(OpTest("LeakyRelu", 16).in(x).run1()), want([](double t) { return t < 0 ? 0.01 * t : t; })));
  CHECK(close(values(OpTest("Elu", 6).in(x).f("alpha", 2.0f).run1()), want([](double t) { return t < 0 ? 2 * (std::exp(t) - 1) : t; })));
  CHECK(close(values(OpTest("Celu", 12).in(x).f("alpha", 2.0f).run1()),
              want([](double t) { return std::max(0.0, t) + std::min(0.0, 2 * (std::exp(t / 2) - 1)); })));
  const double a = 1.67326319217681884765625, g = 1.05070102214813232421875;
  CHECK(close(values(OpTest("Selu", 6).in(x).run1()), want([&](double t) { return t > 0 ? g * t : g * (a * std::exp(t) - a); })));
  CHECK(close(values(OpTest("HardSigmoid", 6).in(x).run1()), want([](double t) { return std::clamp(0.2 * t + 0.5, 0.0, 1.0); })));
  CHECK(close(values(OpTest("HardSwish", 14).in(x).run1()), want([](double t) { return t * std::clamp(t / 6 + 0.5, 0.0, 1.0); })));
  CHECK(close(values(OpTest("Softplus", 1).in(x).run1()), want([](double t) { return std::log(std::exp(t) + 1); })));
  CHECK(close(values(OpTest("Softsign", 1).in(x).run1()), want([](double t) { return t / (1 + std::abs(t)); })));
  CHECK(close(values(OpTest("ThresholdedRelu", 10).in(x).f("alpha", 0.5f).run1()), want([](double t) { return t > 0.5 ? t : 0; })));
  CHECK(close(values(OpTest("Mish", 18).in(x).run1()), want([](double t) { return t * std::tanh(std::log1p(std::exp(t))); })));
  CHECK(close(values(OpTest("Shrink", 9).in(x).f("lambd", 0.5f).f("bias", 0.25f).run1()),
              want([](double t) { return t < -0.5 ? t + 0.25 : (t > 0.5 ? t - 0.25 : 0); })));
  CHECK(values(OpTest("Shrink", 9).in(vec<int32_t>({-3, 0, 3})).f("lambd", 1.0f).f("bias", 1.0f).run1()) ==
        std::vector<double>{-2, 0, 2});
  // Softplus does not overflow for large inputs.
  CHECK(close(values(OpTest("Softplus", 1).in(vec<float>({100.0f, -100.0f})).run1()), {100.0, 0.0}, 1e-5, 1e-6));
}

TEST_CASE("Gelu: exact and tanh approximations; a bad attribute is a model error") {
  const auto x = vec<float>({-1, 0, 1});
  CHECK(close(values(OpTest("Gelu", 20).in(x).run1()), {-0.15865526, 0, 0.84134474}, 1e-5, 1e-6));
  CHECK(close(values(OpTest("Gelu", 20).in(x).s("approximate", "tanh").run1()), {-0.158808, 0, 0.841192}, 1e-5, 1e-6));
  CHECK_THROWS_AS(OpTest("Gelu", 20).in(x).s("approximate", "fast").run1(), ModelError);
}

TEST_CASE("large unary inputs run in parallel blocks and agree with the scalar formula") {
  const int64_t n = 300001;  // not a multiple of the f16 block
  std::vector<float> xf(static_cast<size_t>(n));
  std::vector<mcc::f16> xh(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    xf[static_cast<size_t>(i)] = static_cast<float>((i % 2001) - 1000) / 100.0f;
    xh[static_cast<size_t>(i)] = mcc::f16(xf[static_cast<size_t>(i)]);
  }
  const auto yf = values(OpTest("Sigmoid", 13).in(vec<float>(xf)).run1());
  const auto yh = values(OpTest("Sigmoid", 13).in(vec<mcc::f16>(xh)).run1());
  double worst_f = 0, worst_h = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double ref = 1 / (1 + std::exp(-static_cast<double>(xf[static_cast<size_t>(i)])));
    const double refh = 1 / (1 + std::exp(-static_cast<double>(static_cast<float>(xh[static_cast<size_t>(i)]))));
    worst_f = std::max(worst_f, std::abs(yf[static_cast<size_t>(i)] - ref));
    worst_h = std::max(worst_h, std::abs(yh[static_cast<size_t>(i)] - refh));
  }
  CHECK(worst_f < 1e-6);
  CHECK(worst_h < 1e-3);
}

TEST_CASE("unary ops reject dtypes outside their schema") {
  CHECK_THROWS_AS(OpTest("Relu", 14).in(vec<bool>({true})).run1(), UnsupportedError);
  CHECK_THROWS_AS(OpTest("Exp", 13).in(vec<int32_t>({1})).run1(), UnsupportedError);
  CHECK_THROWS_AS(OpTest("Not", 1).in(vec<float>({1})).run1(), UnsupportedError);
}

// ---------------------------------------------------------------- binary

TEST_CASE_TEMPLATE("Add, Sub, Mul, Div broadcast like numpy", T, float, double, mcc::f16, mcc::bf16, int32_t, int64_t, uint8_t) {
  // [2,1,3] op [2,1] -> [2,2,3]
  const auto a = tensor<T>({2, 1, 3}, std::vector<T>{T(1), T(2), T(3), T(4), T(5), T(6)});
  const auto b = tensor<T>({2, 1}, std::vector<T>{T(1), T(2)});
  std::vector<double> add, sub, mul, div;
  const double av[2][3] = {{1, 2, 3}, {4, 5, 6}}, bv[2] = {1, 2};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) {
        add.push_back(av[i][k] + bv[j]);
        sub.push_back(av[i][k] - bv[j]);
        mul.push_back(av[i][k] * bv[j]);
        div.push_back(std::is_integral_v<T> ? std::trunc(av[i][k] / bv[j]) : av[i][k] / bv[j]);
      }
  if (std::is_unsigned_v<T>)
    for (auto& s : sub) s = s < 0 ? s + 256 : s;
  const double rt = tol_for(ir::dtype_of<T>()).rtol;
  ir::Tensor y = OpTest("Add", 14).in(a).in(b).run1();
  CHECK(y.dims() == std::vector<int64_t>{2, 2, 3});
  CHECK(y.dtype() == ir::dtype_of<T>());
  CHECK(close(values(y), add, rt));
  CHECK(close(values(OpTest("Sub", 14).in(a).in(b).run1()), sub, rt));
  CHECK(close(values(OpTest("Mul", 14).in(a).in(b).run1()), mul, rt));
  CHECK(close(values(OpTest("Div", 14).in(a).in(b).run1()), div, rt));
}

TEST_CASE("binary fast paths: same shape, scalar operands, outer broadcast, large parallel tensors") {
  CHECK(values(OpTest("Mul", 14).in(vec<float>({1, 2, 3})).in(tensor<float>({}, {2})).run1()) == std::vector<double>{2, 4, 6});
  CHECK(values(OpTest("Sub", 14).in(tensor<float>({1}, {10})).in(vec<float>({1, 2, 3})).run1()) == std::vector<double>{9, 8, 7});
  // [3,1] + [1,4] -> [3,4]
  CHECK(values(OpTest("Add", 14).in(tensor<float>({3, 1}, {0, 10, 20})).in(tensor<float>({1, 4}, {1, 2, 3, 4})).run1()) ==
        std::vector<double>{1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24});
  // NCHW + per-channel [1,C,1,1], large enough to split across threads.
  const int64_t N = 2, C = 3, HW = 20000;
  std::vector<float> x(static_cast<size_t>(N * C * HW));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
  const auto y = values(OpTest("Add", 14).in(tensor<float>({N, C, 100, 200}, x)).in(tensor<float>({1, C, 1, 1}, {100, 200, 300})).run1());
  bool ok = y.size() == x.size();
  for (size_t i = 0; ok && i < x.size(); ++i) ok = y[i] == x[i] + 100.0 * static_cast<double>((i / HW) % C + 1);
  CHECK(ok);
}

TEST_CASE("integer Div truncates, Div/Mod by zero give 0, uint8 arithmetic wraps") {
  CHECK(values(OpTest("Div", 14).in(vec<int32_t>({-3, 3, -3, 3, 7})).in(vec<int32_t>({2, 2, -2, -2, 0})).run1()) ==
        std::vector<double>{-1, 1, 1, -1, 0});
  CHECK(values(OpTest("Div", 14).in(vec<int32_t>({std::numeric_limits<int32_t>::min()})).in(vec<int32_t>({-1})).run1()) ==
        std::vector<double>{static_cast<double>(std::numeric_limits<int32_t>::min())});
  CHECK(values(OpTest("Add", 14).in(vec<uint8_t>({250, 1})).in(vec<uint8_t>({10, 2})).run1()) == std::vector<double>{4, 3});
  CHECK(values(OpTest("Mul", 14).in(vec<uint16_t>({65535})).in(vec<uint16_t>({65535})).run1()) == std::vector<double>{1});
  CHECK(values(OpTest("Mod", 13).in(vec<int32_t>({5})).in(vec<int32_t>({0})).run1()) == std::vector<double>{0});
}

TEST_CASE("Mod: fmod=0 follows the divisor's sign, fmod=1 the dividend's (spec examples)") {
  const auto a = vec<int32_t>({-4, 7, 5, 4, -7, 8});
  const auto b = vec<int32_t>({2, -3, 8, -2, 3, 5});
  CHECK(values(OpTest("Mod", 13).in(a).in(b).run1()) == std::vector<double>{0, -2, 5, 0, 2, 3});
  CHECK(values(OpTest("Mod", 13).in(a).in(b).i("fmod", 1).run1()) == std::vector<double>{0, 1, 5, 0, -1, 3});
  const auto fa = vec<float>({-4.3f, 7.2f, 5.0f, 4.3f, -7.2f, 8.0f});
  const auto fb = vec<float>({2.1f, -3.4f, 8.0f, -2.1f, 3.4f, 5.0f});
  CHECK(close(values(OpTest("Mod", 13).in(fa).in(fb).i("fmod", 1).run1()), {-0.1, 0.4, 5, 0.1, -0.4, 3}, 1e-4, 1e-5));
  CHECK_THROWS_AS(OpTest("Mod", 13).in(a).in(b).i("fmod", 2).run1(), ModelError);
}

TEST_CASE("Pow with mixed base and exponent dtypes keeps the base dtype") {
  ir::Tensor y = OpTest("Pow", 15).in(vec<int32_t>({1, 2, 3})).in(vec<float>({4, 5, 6})).run1();
  CHECK(y.dtype() == DType::I32);
  CHECK(values(y) == std::vector<double>{1, 32, 729});
  CHECK(values(OpTest("Pow", 15).in(vec<float>({1, 2, 3})).in(vec<int64_t>({4, 5, 6})).run1()) == std::vector<double>{1, 32, 729});
  CHECK(values(OpTest("Pow", 15).in(vec<int64_t>({2, -2, 3})).in(vec<int64_t>({10, 3, 0})).run1()) == std::vector<double>{1024, -8, 1});
  CHECK(values(OpTest("Pow", 15).in(vec<float>({-3, 2, 4})).in(tensor<float>({}, {2})).run1()) == std::vector<double>{9, 4, 16});
  CHECK(values(OpTest("Pow", 15).in(vec<float>({4, 9})).in(tensor<float>({}, {0.5f})).run1()) == std::vector<double>{2, 3});
  CHECK(close(values(OpTest("Pow", 15).in(vec<mcc::f16>({mcc::f16(2.0f)})).in(vec<double>({0.5})).run1()), {std::sqrt(2.0)}, 1e-3));
  CHECK_THROWS_AS(OpTest("Pow", 15).in(vec<uint8_t>({2})).in(vec<uint8_t>({2})).run1(), UnsupportedError);
}

TEST_CASE("BitShift, bitwise and logical ops") {
  CHECK(values(OpTest("BitShift", 11).in(vec<uint8_t>({16, 4, 1})).in(vec<uint8_t>({1, 2, 3})).s("direction", "LEFT").run1()) ==
        std::vector<double>{32, 16, 8});
  CHECK(values(OpTest("BitShift", 11).in(vec<uint32_t>({16, 4, 1})).in(vec<uint32_t>({1, 2, 40})).s("direction", "RIGHT").run1()) ==
        std::vector<double>{8, 1, 0});
  CHECK_THROWS_AS(OpTest("BitShift", 11).in(vec<uint8_t>({1})).in(vec<uint8_t>({1})).s("direction", "UP").run1(), ModelError);
  CHECK(values(OpTest("BitwiseAnd", 18).in(vec<int16_t>({12, -1})).in(vec<int16_t>({10, 7})).run1()) == std::vector<double>{8, 7});
  CHECK(values(OpTest("BitwiseOr", 18).in(vec<uint64_t>({12})).in(vec<uint64_t>({3})).run1()) == std::vector<double>{15});
  CHECK(values(OpTest("BitwiseXor", 18).in(vec<int8_t>({12})).in(vec<int8_t>({10})).run1()) == std::vector<double>{6});
  const auto p = vec<bool>({true, true, false, false}), q = vec<bool>({true, false, true, false});
  CHECK(values(OpTest("And", 7).in(p).in(q).run1()) == std::vector<double>{1, 0, 0, 0});
  CHECK(values(OpTest("Or", 7).in(p).in(q).run1()) == std::vector<double>{1, 1, 1, 0});
  CHECK(values(OpTest("Xor", 7).in(p).in(q).run1()) == std::vector<double>{0, 1, 1, 0});
  CHECK(values(OpTest("And", 7).in(tensor<bool>({2, 2}, {true, true, false, true})).in(vec<bool>({true, false})).run1()) ==
        std::vector<double>{1, 0, 0, 0});
}

TEST_CASE("comparisons return bool for numeric, f16 and string inputs") {
  const auto a = vec<float>({1, 2, 3}), b = tensor<float>({}, {2});
  ir::Tensor e = OpTest("Equal", 13).in(a).in(b).run1();
  CHECK(e.dtype() == DType::Bool);
  CHECK(values(e) == std::vector<double>{0, 1, 0});
  CHECK(values(OpTest("Less", 13).in(a).in(b).run1()) == std::vector<double>{1, 0, 0});
  CHECK(values(OpTest("Greater", 13).in(a).in(b).run1()) == std::vector<double>{0, 0, 1});
  CHECK(values(OpTest("LessOrEqual", 16).in(a).in(b).run1()) == std::vector<double>{1, 1, 0});
  CHECK(values(OpTest("GreaterOrEqual", 16).in(a).in(b).run1()) == std::vector<double>{0, 1, 1});
  CHECK(values(OpTest("Greater", 13).in(vec<uint64_t>({5, 1})).in(vec<uint64_t>({1, 5})).run1()) == std::vector<double>{1, 0});
  CHECK(values(OpTest("Equal", 13).in(vec<mcc::f16>({mcc::f16(0.5f)})).in(vec<mcc::f16>({mcc::f16(0.5f)})).run1()) ==
        std::vector<double>{1});
  CHECK(values(OpTest("Equal", 13).in(vec<bool>({true, false})).in(vec<bool>({true, true})).run1()) == std::vector<double>{1, 0});
  const auto s1 = ir::Tensor::from_strings({2}, {"string1", "string2"});
  const auto s2 = ir::Tensor::from_strings({1}, {"string1"});
  CHECK(values(OpTest("Equal", 19).in(s1).in(s2).run1()) == std::vector<double>{1, 0});
}

TEST_CASE("PRelu broadcasts the slope; opset 6 takes a per-channel slope") {
  CHECK(values(OpTest("PRelu", 16).in(tensor<float>({2, 2}, {-1, 2, -3, 4})).in(vec<float>({0.5f, 0.25f})).run1()) ==
        std::vector<double>{-0.5, 2, -1.5, 4});
  CHECK(values(OpTest("PRelu", 6).in(tensor<float>({1, 2, 2}, {-1, -2, -3, 4})).in(vec<float>({0.5f, 0.25f})).run1()) ==
        std::vector<double>{-0.5, -1, -0.75, 4});
  CHECK(values(OpTest("PRelu", 16).in(vec<int32_t>({-4, 4})).in(tensor<int32_t>({1}, {3})).run1()) == std::vector<double>{-12, 4});
  CHECK_THROWS_AS(OpTest("PRelu", 16).in(vec<float>({1})).in(vec<float>({1, 2})).run1(), ModelError);
}

TEST_CASE("opset < 7 legacy broadcast aligns B at axis") {
  // A [2,3] + B [2] at axis 0 -> B as [2,1].
  CHECK(values(OpTest("Add", 6).in(tensor<float>({2, 3}, {0, 0, 0, 0, 0, 0})).in(vec<float>({1, 2})).i("broadcast", 1).i("axis", 0).run1()) ==
        std::vector<double>{1, 1, 1, 2, 2, 2});
  CHECK(values(OpTest("Mul", 6).in(tensor<float>({2, 3}, {1, 1, 1, 1, 1, 1})).in(vec<float>({1, 2, 3})).i("broadcast", 1).run1()) ==
        std::vector<double>{1, 2, 3, 1, 2, 3});
}

TEST_CASE("binary ops report shape and dtype mismatches") {
  CHECK_THROWS_AS(OpTest("Add", 14).in(vec<float>({1, 2, 3})).in(vec<float>({1, 2})).run1(), ModelError);
  CHECK_THROWS_AS(OpTest("Add", 14).in(vec<float>({1})).in(vec<int32_t>({1})).run1(), ModelError);
  CHECK_THROWS_AS(OpTest("And", 7).in(vec<float>({1})).in(vec<float>({1})).run1(), UnsupportedError);
}

// ---------------------------------------------------------------- variadic, Where, Clip

TEST_CASE("Sum, Mean, Max, Min fold any number of broadcast inputs") {
  const auto a = vec<float>({3, 2, 1}), b = tensor<float>({2, 1}, {1, 4}), c = tensor<float>({}, {2});
  ir::Tensor s = OpTest("Sum", 13).in(a).in(b).in(c).run1();
  CHECK(s.dims() == std::vector<int64_t>{2, 3});
  CHECK(values(s) == std::vector<double>{6, 5, 4, 9, 8, 7});
  CHECK(close(values(OpTest("Mean", 13).in(a).in(b).in(c).run1()), {2, 5.0 / 3, 4.0 / 3, 3, 8.0 / 3, 7.0 / 3}));
  CHECK(values(OpTest("Max", 13).in(a).in(b).run1()) == std::vector<double>{3, 2, 1, 4, 4, 4});
  CHECK(values(OpTest("Min", 13).in(vec<int8_t>({-3, 2})).in(vec<int8_t>({1, -5})).run1()) == std::vector<double>{-3, -5});
  CHECK(values(OpTest("Max", 13).in(vec<uint64_t>({7})).run1()) == std::vector<double>{7});
  const auto mx = values(OpTest("Max", 13).in(vec_of<float>({kNaN, 1})).in(vec_of<float>({0, kNaN})).run1());
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(close(values(OpTest("Sum", 13).in(vec<mcc::f16>({mcc::f16(1.0f)})).in(vec<mcc::f16>({mcc::f16(0.5f)})).run1()), {1.5}));
  CHECK_THROWS_AS(OpTest("Sum", 13).in(vec<int32_t>({1})).run1(), UnsupportedError);
  CHECK_THROWS_AS(OpTest("Max", 13).in(vec<float>({1, 2})).in(vec<float>({1, 2, 3})).run1(), ModelError);
}

TEST_CASE("Where selects with three-way broadcasting, strings included") {
  const auto c = tensor<bool>({2, 2}, {true, false, true, true});
  const auto x = tensor<float>({2, 2}, {1, 2, 3, 4});
  const auto y = tensor<float>({2, 2}, {9, 8, 7, 6});
  CHECK(values(OpTest("Where", 16).in(c).in(x).in(y).run1()) == std::vector<double>{1, 8, 3, 4});
  CHECK(values(OpTest("Where", 16).in(vec<bool>({true, false})).in(tensor<int64_t>({2, 1}, {1, 2})).in(tensor<int64_t>({}, {0})).run1()) ==
        std::vector<double>{1, 0, 2, 0});
  ir::Tensor s = OpTest("Where", 16).in(vec<bool>({false, true})).in(ir::Tensor::from_strings({2}, {"a", "b"}))
                     .in(ir::Tensor::from_strings({}, {"z"})).run1();
  CHECK(s.strings() == std::vector<std::string>{"z", "b"});
  CHECK_THROWS_AS(OpTest("Where", 16).in(vec<float>({1})).in(x).in(y).run1(), ModelError);
}

TEST_CASE_TEMPLATE("Clip with min/max inputs, omitted bounds and min > max", T, float, mcc::f16, int8_t, int64_t) {
  const auto x = vec_of<T>({-5, -1, 0, 1, 5});
  const auto lo = tensor<T>({}, {T(-2)}), hi = tensor<T>({}, {T(2)});
  CHECK(values(OpTest("Clip", 13).in(x).in(lo).in(hi).run1()) == std::vector<double>{-2, -1, 0, 1, 2});
  CHECK(values(OpTest("Clip", 13).in(x).none().in(hi).run1()) == std::vector<double>{-5, -1, 0, 1, 2});
  CHECK(values(OpTest("Clip", 13).in(x).in(lo).run1()) == std::vector<double>{-2, -1, 0, 1, 5});
  CHECK(values(OpTest("Clip", 13).in(x).run1()) == std::vector<double>{-5, -1, 0, 1, 5});
  CHECK(values(OpTest("Clip", 13).in(x).in(hi).in(lo).run1()) == std::vector<double>{-2, -2, -2, -2, -2});
}

TEST_CASE("Clip opset 6 reads min/max attributes; non-scalar bounds are rejected") {
  CHECK(values(OpTest("Clip", 6).in(vec<float>({-5, 0, 5})).f("min", -1).f("max", 1).run1()) == std::vector<double>{-1, 0, 1});
  CHECK(values(OpTest("Clip", 6).in(vec<float>({-5, 0, 5})).f("max", 1).run1()) == std::vector<double>{-5, 0, 1});
  CHECK_THROWS_AS(OpTest("Clip", 13).in(vec<float>({1})).in(vec<float>({0, 1})).run1(), ModelError);
}
