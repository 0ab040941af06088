// The cuda backend's unary, binary, variadic, Where, Clip and Cast kernels against the cpu:
// every registered op, f32/f16/int dtypes, numpy broadcasting patterns, odd shapes, empty
// tensors, attribute variants, and what stays on the cpu.
#include <doctest/doctest.h>

#include "backends/cuda/ew_test_util.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_ew;
using ir::DType;

namespace {

const std::vector<int64_t> kOdd = {3, 7, 33};

/// Broadcast pairs over kOdd: same, scalar, row, column, middle, both sides broadcasting.
const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kPairs = {
    {{3, 7, 33}, {3, 7, 33}}, {{3, 7, 33}, {}},     {{}, {3, 7, 33}},   {{3, 7, 33}, {33}},
    {{3, 7, 33}, {3, 7, 1}},  {{3, 7, 33}, {1, 7, 1}}, {{3, 1, 33}, {7, 1}}, {{1, 33}, {3, 7, 1}},
};

OpTest unary_case(const std::string& op, DType dt, double lo = -3, double hi = 3, int opset = 17) {
  return OpTest(op, opset).in(values_of(dt, kOdd, 11, lo, hi));
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda unary float ops on f32 and f16") {
    const char* ops[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Floor", "Ceil", "Round", "Erf", "Sin",
                         "Cos", "Softplus", "Softsign", "Elu", "Celu", "LeakyRelu", "ThresholdedRelu",
                         "HardSigmoid", "HardSwish", "Mish", "Selu", "Sign", "Reciprocal"};
    for (DType dt : {DType::F32, DType::F16})
      for (const char* op : ops) {
        INFO(op << " " << ir::dtype_name(dt));
        check_on_cuda(unary_case(op, dt), op);
      }
    for (DType dt : {DType::F32, DType::F16})
      for (const char* op : {"Log", "Sqrt"}) {
        INFO(op << " " << ir::dtype_name(dt));
        check_on_cuda(unary_case(op, dt, 0.05, 4), op);
      }
  }

  TEST_CASE("cuda trigonometric and hyperbolic ops, Swish") {
    for (DType dt : {DType::F32, DType::F16}) {
      for (const char* op : {"Tan", "Atan", "Sinh", "Cosh", "Asinh"}) {
        INFO(op << " " << ir::dtype_name(dt));
        check_on_cuda(unary_case(op, dt, -1.2, 1.2), op);
      }
      for (const char* op : {"Asin", "Acos", "Atanh"}) {
        INFO(op << " " << ir::dtype_name(dt));
        check_on_cuda(unary_case(op, dt, -0.95, 0.95), op);
      }
      check_on_cuda(unary_case("Acosh", dt, 1.05, 5), "Acosh");
      check_on_cuda(unary_case("Swish", dt, -4, 4, 24), "Swish");
      check_on_cuda(unary_case("Swish", dt, -4, 4, 24).f("alpha", 1.7f), "Swish");
    }
  }

  TEST_CASE("cuda unary ops: attributes") {
    check_on_cuda(unary_case("LeakyRelu", DType::F32).f("alpha", 0.3f), "LeakyRelu");
    check_on_cuda(unary_case("Elu", DType::F32).f("alpha", 0.5f), "Elu");
    check_on_cuda(unary_case("Celu", DType::F32).f("alpha", 2.f), "Celu");
    check_on_cuda(unary_case("ThresholdedRelu", DType::F32).f("alpha", 0.25f), "ThresholdedRelu");
    check_on_cuda(unary_case("HardSigmoid", DType::F16).f("alpha", 0.3f).f("beta", 0.4f), "HardSigmoid");
    check_on_cuda(unary_case("Selu", DType::F32).f("alpha", 1.5f).f("gamma", 1.1f), "Selu");
    for (DType dt : {DType::F32, DType::F16}) {
      check_on_cuda(unary_case("Gelu", dt, -3, 3, 20), "Gelu");
      check_on_cuda(unary_case("Gelu", dt, -3, 3, 20).s("approximate", "tanh"), "Gelu");
    }
    CHECK_FALSE(support_of("Gelu", 20, {DType::F32}, {attr_s("approximate", "fast")}).ok);
  }

  TEST_CASE("cuda unary ops on integers and bool") {
    for (DType dt : {DType::I32, DType::I64})
      for (const char* op : {"Neg", "Abs", "Sign", "Relu"}) {
        INFO(op << " " << ir::dtype_name(dt));
        check_on_cuda(unary_case(op, dt, -50, 50), op);
      }
    check_on_cuda(OpTest("Abs", 13).in(vec<int32_t>({INT32_MIN, -1, 0, 5})), "Abs");
    check_on_cuda(OpTest("Neg", 13).in(vec<int64_t>({INT64_MIN, -1, 0, 5})), "Neg");
    check_on_cuda(OpTest("Not", 1).in(values_of(DType::Bool, kOdd, 3)), "Not");
    check_declined(OpTest("Exp", 13).in(vec<double>({1.0, 2.0})));
    check_declined(OpTest("Neg", 13).in(vec<int8_t>({1, -2})));
  }

  TEST_CASE("cuda unary ops on empty tensors") {
    check_on_cuda(OpTest("Relu", 14).in(values_of(DType::F32, {0, 5}, 1)), "Relu");
    check_on_cuda(OpTest("Abs", 13).in(values_of(DType::I64, {3, 0}, 1)), "Abs");
  }

  TEST_CASE("cuda binary arithmetic: every broadcast pattern and dtype") {
    for (DType dt : {DType::F32, DType::F16, DType::I32, DType::I64})
      for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"})
        for (size_t p = 0; p < kPairs.size(); ++p) {
          INFO(op << " " << ir::dtype_name(dt) << " pair " << p);
          const bool div = std::string(op) == "Div";
          const double lo = div && dt != DType::F32 && dt != DType::F16 ? -9 : -10;
          OpTest t(op, 14);
          t.in(values_of(dt, kPairs[p].first, 5, lo, 10));
          // Float divisors away from 0; integer divisors include 0 (gives 0, as the cpu).
          if (div && (dt == DType::F32 || dt == DType::F16)) t.in(values_of(dt, kPairs[p].second, 6, 0.5, 4));
          else t.in(values_of(dt, kPairs[p].second, 6, -5, 5));
          check_on_cuda(t, op);
        }
  }

  TEST_CASE("cuda binary ops decline mixed, unknown and unhandled dtypes") {
    CHECK_FALSE(support_of("Add", 14, {DType::F32, DType::I64}).ok);
    CHECK_FALSE(support_of("Add", 14, {DType::F32, DType::Undefined}).ok);
    CHECK_FALSE(support_of("Mul", 14, {DType::F64, DType::F64}).ok);
    CHECK_FALSE(support_of("Add", 6, {DType::F32, DType::F32}).ok);  // legacy broadcast attribute
    CHECK_FALSE(support_of("And", 7, {DType::I32, DType::I32}).ok);
    CHECK(support_of("Add", 14, {DType::I64, DType::I64}).ok);
    check_declined(OpTest("Add", 14).in(vec<double>({1.0})).in(vec<double>({2.0})));
  }

  TEST_CASE("cuda integer division truncates and wraps like the cpu") {
    check_on_cuda(OpTest("Div", 14).in(vec<int32_t>({7, -7, 7, -7, 5, INT32_MIN})).in(vec<int32_t>({2, 2, -2, -2, 0, -1})),
                  "Div");
    check_on_cuda(OpTest("Div", 14).in(vec<int64_t>({9, -9, 1, INT64_MIN})).in(vec<int64_t>({4, 4, 0, -1})), "Div");
  }

  TEST_CASE("cuda Pow: float and integer") {
    for (DType dt : {DType::F32, DType::F16})
      check_on_cuda(OpTest("Pow", 15).in(values_of(dt, kOdd, 1, 0.1, 3)).in(values_of(dt, {33}, 2, -2, 2)), "Pow");
    check_on_cuda(OpTest("Pow", 15).in(values_of(DType::F32, kOdd, 1, 0.1, 3)).in(scalar<float>(2.f)), "Pow");
    check_on_cuda(OpTest("Pow", 15).in(vec<int64_t>({2, -3, 5, 1, -1, 0})).in(vec<int64_t>({10, 3, 0, -2, -3, 2})), "Pow");
    check_on_cuda(OpTest("Pow", 15).in(values_of(DType::I32, kOdd, 1, -4, 4)).in(values_of(DType::I32, {7, 1}, 2, 0, 5)),
                  "Pow");
    // An exponent of another dtype stays on the cpu.
    check_declined(OpTest("Pow", 15).in(values_of(DType::F32, {4}, 1, 0.1, 3)).in(vec<int64_t>({2})));
  }

  TEST_CASE("cuda Mod: fmod 0 takes the divisor's sign, fmod 1 the dividend's") {
    for (int fmod : {0, 1}) {
      for (DType dt : {DType::I32, DType::I64})
        for (size_t p : {0, 1, 3, 6}) {
          INFO(ir::dtype_name(dt) << " fmod " << fmod << " pair " << p);
          check_on_cuda(OpTest("Mod", 13).i("fmod", fmod).in(values_of(dt, kPairs[p].first, 1, -30, 30))
                            .in(values_of(dt, kPairs[p].second, 2, -6, 6)), "Mod");
        }
      for (DType dt : {DType::F32, DType::F16}) {
        INFO(ir::dtype_name(dt) << " fmod " << fmod);
        check_on_cuda(OpTest("Mod", 13).i("fmod", fmod).in(values_of(dt, kOdd, 1, -30, 30))
                          .in(values_of(dt, {7, 1}, 2, 1, 6)), "Mod");
        check_on_cuda(OpTest("Mod", 13).i("fmod", fmod).in(values_of(dt, kOdd, 1, -30, 30))
                          .in(values_of(dt, {33}, 2, -6, -1)), "Mod");
      }
    }
    check_on_cuda(OpTest("Mod", 13).in(vec<int32_t>({7, -7, 7, -7, 5, INT32_MIN})).in(vec<int32_t>({3, 3, -3, -3, 0, -1})),
                  "Mod");
    CHECK_FALSE(support_of("Mod", 13, {DType::I32, DType::I32}, {attr_i("fmod", 2)}).ok);
  }

  TEST_CASE("cuda comparisons and logical ops") {
    for (DType dt : {DType::F32, DType::F16, DType::I32, DType::I64})
      for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
        for (size_t p : {0, 1, 3, 6}) {
          INFO(op << " " << ir::dtype_name(dt) << " pair " << p);
          // Few distinct values so that equal pairs occur.
          check_on_cuda(OpTest(op, 16).in(values_of(dt, kPairs[p].first, 7, -2, 2))
                            .in(values_of(dt, kPairs[p].second, 8, -2, 2)),
                        op);
        }
    check_on_cuda(OpTest("Equal", 13).in(values_of(DType::Bool, kOdd, 1)).in(values_of(DType::Bool, {33}, 2)), "Equal");
    for (const char* op : {"And", "Or", "Xor"})
      for (size_t p : {0, 2, 4, 7}) {
        INFO(op << " pair " << p);
        check_on_cuda(OpTest(op, 7).in(values_of(DType::Bool, kPairs[p].first, 3))
                          .in(values_of(DType::Bool, kPairs[p].second, 4)),
                      op);
      }
  }

  TEST_CASE("cuda PRelu") {
    for (DType dt : {DType::F32, DType::F16, DType::I32, DType::I64}) {
      check_on_cuda(OpTest("PRelu", 16).in(values_of(dt, kOdd, 1, -5, 5)).in(values_of(dt, {33}, 2, 0, 2)), "PRelu");
      check_on_cuda(OpTest("PRelu", 16).in(values_of(dt, kOdd, 1, -5, 5)).in(values_of(dt, {7, 1}, 2, 0, 2)), "PRelu");
    }
  }

  TEST_CASE("cuda Sum, Mean, Max, Min with one to three broadcast inputs") {
    for (DType dt : {DType::F32, DType::F16})
      for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
        INFO(op << " " << ir::dtype_name(dt));
        check_on_cuda(OpTest(op, 13).in(values_of(dt, kOdd, 1)), op);
        check_on_cuda(OpTest(op, 13).in(values_of(dt, kOdd, 1)).in(values_of(dt, {33}, 2)), op);
        check_on_cuda(OpTest(op, 13).in(values_of(dt, {7, 1}, 1)).in(values_of(dt, {3, 1, 33}, 2))
                          .in(values_of(dt, {1, 7, 33}, 3)), op);
        check_on_cuda(OpTest(op, 8).in(values_of(dt, {7}, 1)).in(values_of(dt, {1}, 2)).in(values_of(dt, {}, 3))
                          .in(values_of(dt, {7}, 4)), op);
      }
    for (DType dt : {DType::I32, DType::I64})
      for (const char* op : {"Max", "Min"})
        check_on_cuda(OpTest(op, 13).in(values_of(dt, {3, 1}, 1, -9, 9)).in(values_of(dt, {5}, 2, -9, 9))
                          .in(values_of(dt, {3, 5}, 3, -9, 9)), op);
    const float nan = std::nanf("");
    check_on_cuda(OpTest("Max", 13).in(vec<float>({nan, 1.f, 2.f})).in(vec<float>({0.f, nan, 1.f})), "Max");
    CHECK_FALSE(support_of("Sum", 13, {DType::I32, DType::I32}).ok);
  }

  TEST_CASE("cuda Where: dtypes and broadcasting") {
    for (DType dt : {DType::F32, DType::F16, DType::I64, DType::I32, DType::U8, DType::Bool})
      for (size_t p : {0, 3, 6}) {
        INFO(ir::dtype_name(dt) << " pair " << p);
        check_on_cuda(OpTest("Where", 16).in(values_of(DType::Bool, {3, 7, 1}, 1)).in(values_of(dt, kPairs[p].first, 2, -9, 9))
                          .in(values_of(dt, kPairs[p].second, 3, -9, 9)), "Where");
      }
    check_on_cuda(OpTest("Where", 9).in(values_of(DType::Bool, {}, 1)).in(values_of(DType::F32, {0, 3}, 2))
                      .in(values_of(DType::F32, {3}, 3)), "Where");
    check_on_cuda(OpTest("Where", 16).in(values_of(DType::Bool, {4}, 1)).in(vec<double>({1, 2, 3, 4}))
                      .in(vec<double>({5, 6, 7, 8})), "Where");
  }

  TEST_CASE("cuda Clip: attributes, bound inputs, integers") {
    check_on_cuda(OpTest("Clip", 6).f("min", -0.5f).f("max", 0.25f).in(values_of(DType::F32, kOdd, 1)), "Clip");
    check_on_cuda(OpTest("Clip", 6).f("max", 0.25f).in(values_of(DType::F16, kOdd, 1)), "Clip");
    for (DType dt : {DType::F32, DType::F16}) {
      check_on_cuda(OpTest("Clip", 13).in(values_of(dt, kOdd, 1)).in(values_of(dt, {}, 2, -0.5, -0.4))
                        .in(values_of(dt, {}, 3, 0.3, 0.4)), "Clip");
      check_on_cuda(OpTest("Clip", 13).in(values_of(dt, kOdd, 1)).none().in(values_of(dt, {}, 3, 0.3, 0.4)), "Clip");
      check_on_cuda(OpTest("Clip", 11).in(values_of(dt, kOdd, 1)).in(values_of(dt, {}, 2, -0.5, -0.4)), "Clip");
      check_on_cuda(OpTest("Clip", 13).in(values_of(dt, kOdd, 1)), "Clip");
    }
    for (DType dt : {DType::I32, DType::I64})
      check_on_cuda(OpTest("Clip", 13).in(values_of(dt, kOdd, 1, -20, 20)).in(values_of(dt, {}, 2, -5, -5))
                        .in(values_of(dt, {}, 3, 7, 7)), "Clip");
    // min > max: every output is max.
    check_on_cuda(OpTest("Clip", 13).in(values_of(DType::F32, {5}, 1)).in(scalar<float>(1.f)).in(scalar<float>(0.f)),
                  "Clip");
    check_on_cuda(OpTest("Clip", 13).in(vec<float>({std::nanf(""), 3.f})).in(scalar<float>(0.f)).in(scalar<float>(1.f)),
                  "Clip");
  }

  TEST_CASE("cuda Dropout in inference is the identity") {
    for (DType dt : {DType::F32, DType::F16, DType::I64})
      check_on_cuda(OpTest("Dropout", 13).in(values_of(dt, kOdd, 1)), "Dropout");
    check_on_cuda(OpTest("Dropout", 7).f("ratio", 0.3f).in(values_of(DType::F32, {0, 4}, 1)), "Dropout");
    check_declined(OpTest("Dropout", 13).in(values_of(DType::F32, {4}, 1)).outs(2));
    check_declined(OpTest("Dropout", 13).in(values_of(DType::F32, {4}, 1)).in(scalar<float>(0.2f)));
  }

  TEST_CASE("cuda Cast between every handled dtype pair") {
    const DType types[] = {DType::F32, DType::F16, DType::I32, DType::I64, DType::Bool, DType::U8, DType::I8};
    for (DType from : types)
      for (DType to : types) {
        INFO(ir::dtype_name(from) << " -> " << ir::dtype_name(to));
        check_on_cuda(OpTest("Cast", 19).i("to", static_cast<int64_t>(to)).in(values_of(from, kOdd, 4, -150, 150)),
                      "Cast");
      }
    const float inf = INFINITY, nan = std::nanf("");
    for (DType to : {DType::I32, DType::I64, DType::U8, DType::I8, DType::Bool, DType::F16})
      check_on_cuda(OpTest("Cast", 13).i("to", static_cast<int64_t>(to))
                        .in(vec<float>({nan, inf, -inf, 3e9f, -3e9f, 1e20f, 255.9f, -0.7f, 70000.f, 0.f})), "Cast");
    check_on_cuda(OpTest("Cast", 13).i("to", static_cast<int64_t>(DType::F16))
                      .in(vec<int64_t>({INT64_MAX, INT64_MIN, 65519, 65520, 2049, -3})), "Cast");
    check_on_cuda(OpTest("Cast", 13).i("to", static_cast<int64_t>(DType::I8)).in(vec<int64_t>({300, -129, 127, 1LL << 40})),
                  "Cast");
    check_on_cuda(OpTest("CastLike", 15).in(values_of(DType::F32, kOdd, 1, -9, 9)).in(values_of(DType::I64, {1}, 1)),
                  "CastLike");
    check_on_cuda(OpTest("Cast", 13).i("to", static_cast<int64_t>(DType::F32)).in(values_of(DType::F16, {0}, 1)), "Cast");
    check_declined(OpTest("Cast", 13).i("to", static_cast<int64_t>(DType::F64)).in(values_of(DType::F32, {3}, 1)));
    check_declined(OpTest("Cast", 13).i("to", static_cast<int64_t>(DType::F32)).in(vec<double>({1.5})));
  }
}
