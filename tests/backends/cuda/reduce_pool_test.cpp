// The cuda backend's reductions, ArgMax/ArgMin and pools against the cpu: every reduce op, axes
// as attribute and input, negative axes, keepdims both ways, noop_with_empty_axes, integer
// reductions, empty reductions; MaxPool/AveragePool window attributes (pads, strides, dilations,
// ceil_mode, auto_pad, count_include_pad) on 1-D to 3-D inputs; global pools; what stays on the
// cpu.
#include <doctest/doctest.h>

#include "backends/cuda/ew_test_util.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_ew;
using ir::DType;

namespace {

const char* kReduceOps[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                            "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};

/// The axes sets tried on a rank-3 input (empty: every axis).
const std::vector<std::vector<int64_t>> kAxes = {{}, {0}, {1}, {-1}, {0, 2}, {-3, -2}, {0, 1, 2}};

/// Values away from 0 so that Prod and LogSum stay finite and well-conditioned.
ir::Tensor reduce_input(const std::string& op, DType dt, std::vector<int64_t> dims, unsigned seed) {
  if (op == "ReduceProd") return values_of(dt, std::move(dims), seed, 0.8, 1.2);
  if (op == "ReduceLogSum") return values_of(dt, std::move(dims), seed, 0.1, 2);
  return values_of(dt, std::move(dims), seed, -2, 2);
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda reductions: axes input (opset 18), keepdims both ways, f32 and f16") {
    for (const char* op : kReduceOps)
      for (DType dt : {DType::F32, DType::F16})
        for (const auto& axes : kAxes)
          for (int keep : {0, 1}) {
            INFO(op << " " << ir::dtype_name(dt) << " axes " << axes.size() << " keepdims " << keep);
            OpTest t(op, 18);
            t.i("keepdims", keep).in(reduce_input(op, dt, {3, 7, 33}, 1));
            if (!axes.empty()) t.in(vec<int64_t>(axes));
            check_on_cuda(t, op);
          }
  }

  TEST_CASE("cuda reductions: axes attribute (older opsets)") {
    for (const char* op : kReduceOps) {
      const int opset = std::string(op) == "ReduceSum" ? 11 : 13;
      INFO(op);
      check_on_cuda(OpTest(op, opset).is("axes", {1}).in(reduce_input(op, DType::F32, {4, 5, 6}, 2)), op);
      check_on_cuda(OpTest(op, opset).is("axes", {-1, 0}).i("keepdims", 0).in(reduce_input(op, DType::F32, {4, 5, 6}, 2)),
                    op);
      check_on_cuda(OpTest(op, opset).in(reduce_input(op, DType::F16, {4, 5, 6}, 2)), op);
    }
    check_on_cuda(OpTest("ReduceSum", 13).in(values_of(DType::F32, {4, 5}, 1)).in(vec<int64_t>({0})), "ReduceSum");
  }

  TEST_CASE("cuda reductions: noop_with_empty_axes, long rows, empty reductions, NaN") {
    check_on_cuda(OpTest("ReduceSum", 13).i("noop_with_empty_axes", 1).in(values_of(DType::F32, {3, 4}, 1)), "ReduceSum");
    check_on_cuda(OpTest("ReduceMax", 18).i("noop_with_empty_axes", 1).in(values_of(DType::F32, {3, 4}, 1))
                      .in(vec<int64_t>({})), "ReduceMax");
    check_on_cuda(OpTest("ReduceMean", 18).in(values_of(DType::F32, {2, 5000}, 1)).in(vec<int64_t>({1})), "ReduceMean");
    check_on_cuda(OpTest("ReduceLogSumExp", 18).in(values_of(DType::F32, {3, 700}, 1, -50, 50)).in(vec<int64_t>({-1})),
                  "ReduceLogSumExp");
    for (const char* op : kReduceOps) {
      INFO(op << " over an empty axis");
      check_on_cuda(OpTest(op, 18).in(values_of(DType::F32, {3, 0, 2}, 1)).in(vec<int64_t>({1})), op);
      check_on_cuda(OpTest(op, 18).in(values_of(DType::F32, {0, 4}, 1)).in(vec<int64_t>({1})), op);
    }
    const float nan = std::nanf("");
    for (const char* op : {"ReduceMax", "ReduceMin"})
      check_on_cuda(OpTest(op, 18).i("keepdims", 0).in(tensor<float>({2, 3}, {1.f, nan, 3.f, -1.f, -2.f, 5.f}))
                        .in(vec<int64_t>({1})), op);
    check_on_cuda(OpTest("ReduceLogSumExp", 18).in(tensor<float>({2, 2}, {-INFINITY, -INFINITY, INFINITY, 1.f}))
                      .in(vec<int64_t>({1})), "ReduceLogSumExp");
  }

  TEST_CASE("cuda integer reductions") {
    for (DType dt : {DType::I32, DType::I64})
      for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"})
        for (const auto& axes : kAxes) {
          INFO(op << " " << ir::dtype_name(dt) << " axes " << axes.size());
          OpTest t(op, 18);
          t.in(op == std::string("ReduceProd") ? values_of(dt, {3, 4, 5}, 1, -2, 2) : values_of(dt, {3, 7, 33}, 1, -99, 99));
          if (!axes.empty()) t.in(vec<int64_t>(axes));
          check_on_cuda(t, op);
        }
    check_on_cuda(OpTest("ReduceMax", 18).in(values_of(DType::I64, {3, 0}, 1)).in(vec<int64_t>({1})), "ReduceMax");
    check_declined(OpTest("ReduceL2", 18).in(values_of(DType::I32, {3, 4}, 1)));
    check_declined(OpTest("ReduceSum", 13).in(vec<double>({1.0, 2.0})));
  }

  TEST_CASE("cuda ArgMax and ArgMin: axes, keepdims, select_last_index, ties and NaN") {
    for (const char* op : {"ArgMax", "ArgMin"}) {
      for (DType dt : {DType::F32, DType::F16, DType::I32, DType::I64})
        for (int64_t axis : {0, 1, 2, -1})
          for (int keep : {0, 1})
            for (int last : {0, 1}) {
              INFO(op << " " << ir::dtype_name(dt) << " axis " << axis << " keepdims " << keep << " last " << last);
              // Few distinct values so that ties occur.
              check_on_cuda(OpTest(op, 13).i("axis", axis).i("keepdims", keep).i("select_last_index", last)
                                .in(values_of(dt, {3, 7, 33}, 1, -3, 3)), op);
            }
      check_on_cuda(OpTest(op, 11).in(values_of(DType::F32, {5, 4}, 2)), op);
      check_on_cuda(OpTest(op, 13).i("axis", 1).in(tensor<float>({2, 3}, {1.f, std::nanf(""), 3.f, -1.f, -2.f, 5.f})), op);
      check_on_cuda(OpTest(op, 13).i("axis", 1).in(values_of(DType::F32, {0, 3}, 2)), op);
    }
    check_declined(OpTest("ArgMax", 13).in(vec<double>({1.0, 2.0})));
  }

  TEST_CASE("cuda MaxPool and AveragePool: window attributes on 2-D inputs") {
    struct Case {
      std::vector<int64_t> kernel, strides, pads, dilations;
      int ceil = 0;
      std::string auto_pad = "NOTSET";
    };
    const std::vector<Case> cases = {
        {{3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
        {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
        {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
        {{3, 2}, {2, 3}, {1, 0, 2, 1}, {1, 1}, 1},
        {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
        {{2, 3}, {1, 2}, {}, {1, 1}, 0, "SAME_UPPER"},
        {{3, 2}, {2, 1}, {}, {1, 1}, 0, "SAME_LOWER"},
        {{3, 3}, {1, 1}, {}, {1, 1}, 0, "VALID"},
        {{2, 2}, {1, 1}, {1, 1, 1, 1}, {2, 3}},
    };
    for (const char* op : {"MaxPool", "AveragePool"})
      for (DType dt : {DType::F32, DType::F16})
        for (size_t k = 0; k < cases.size(); ++k)
          for (int cip : {0, 1}) {
            const Case& c = cases[k];
            const bool dil = c.dilations != std::vector<int64_t>{1, 1};
            if (std::string(op) == "MaxPool" && cip) continue;
            INFO(op << " " << ir::dtype_name(dt) << " case " << k << " count_include_pad " << cip);
            OpTest t(op, std::string(op) == "MaxPool" ? 12 : (dil ? 19 : 11));
            t.is("kernel_shape", c.kernel).is("strides", c.strides).i("ceil_mode", c.ceil);
            if (!c.pads.empty()) t.is("pads", c.pads);
            if (c.auto_pad != "NOTSET") t.s("auto_pad", c.auto_pad);
            if (dil) t.is("dilations", c.dilations);
            if (std::string(op) == "AveragePool") t.i("count_include_pad", cip);
            t.in(values_of(dt, {2, 3, 11, 13}, 1, -3, 3));
            check_on_cuda(t, op);
          }
  }

  TEST_CASE("cuda pools: 1-D and 3-D, opset 1 and 8, empty batch, declined Indices") {
    check_on_cuda(OpTest("MaxPool", 8).is("kernel_shape", {3}).is("strides", {2}).in(values_of(DType::F32, {2, 3, 17}, 1)),
                  "MaxPool");
    check_on_cuda(OpTest("AveragePool", 1).is("kernel_shape", {2, 2, 2}).is("pads", {1, 0, 1, 0, 1, 1})
                      .in(values_of(DType::F32, {1, 2, 5, 6, 7}, 1)), "AveragePool");
    check_on_cuda(OpTest("MaxPool", 10).is("kernel_shape", {2, 3, 2}).is("strides", {1, 2, 2}).i("ceil_mode", 1)
                      .in(values_of(DType::F16, {1, 2, 5, 6, 7}, 1)), "MaxPool");
    check_on_cuda(OpTest("MaxPool", 12).is("kernel_shape", {2, 2}).in(values_of(DType::F32, {0, 3, 4, 4}, 1)), "MaxPool");
    // A window entirely in the padding gives the lowest value (MaxPool) and 0 (AveragePool).
    check_on_cuda(OpTest("MaxPool", 12).is("kernel_shape", {1, 1}).is("strides", {2, 2}).is("pads", {1, 1, 1, 1})
                      .in(values_of(DType::F32, {1, 1, 3, 3}, 1)), "MaxPool");
    check_on_cuda(OpTest("AveragePool", 11).is("kernel_shape", {1, 1}).is("strides", {2, 2}).is("pads", {1, 1, 1, 1})
                      .in(values_of(DType::F32, {1, 1, 3, 3}, 1)), "AveragePool");
    check_declined(OpTest("MaxPool", 12).is("kernel_shape", {2, 2}).outs(2).in(values_of(DType::F32, {1, 2, 4, 4}, 1)));
    check_declined(OpTest("MaxPool", 12).is("kernel_shape", {2, 2}).in(values_of(DType::U8, {1, 2, 4, 4}, 1, 0, 100)));
  }

  TEST_CASE("cuda GlobalAveragePool and GlobalMaxPool") {
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
      for (DType dt : {DType::F32, DType::F16}) {
        INFO(op << " " << ir::dtype_name(dt));
        check_on_cuda(OpTest(op, 1).in(values_of(dt, {2, 3, 11, 13}, 1, -3, 3)), op);
        check_on_cuda(OpTest(op, 1).in(values_of(dt, {2, 5, 17}, 1, -3, 3)), op);
        check_on_cuda(OpTest(op, 1).in(values_of(dt, {1, 4, 3, 5, 2}, 1, -3, 3)), op);
        check_on_cuda(OpTest(op, 1).in(values_of(dt, {2, 3, 40, 40}, 1, -3, 3)), op);
        check_on_cuda(OpTest(op, 1).in(values_of(dt, {0, 3, 4, 4}, 1, -3, 3)), op);
      }
  }
}
