// The cuda backend's BatchNormalization, Instance/Group/LayerNormalization, Softmax and
// LogSoftmax against the cpu: f32/f16, odd row lengths, every axis form, optional inputs and
// outputs, parameter dtypes, empty tensors, and what stays on the cpu.
#include <doctest/doctest.h>

#include "backends/cuda/ew_test_util.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_ew;
using ir::DType;

namespace {

OpTest batch_norm_case(DType dt, DType param_dt, std::vector<int64_t> dims, int opset = 15) {
  const int64_t C = dims[1];
  return OpTest("BatchNormalization", opset)
      .f("epsilon", 1e-3f)
      .in(values_of(dt, dims, 1, -2, 2))
      .in(values_of(param_dt, {C}, 2, 0.5, 1.5))
      .in(values_of(param_dt, {C}, 3, -1, 1))
      .in(values_of(param_dt, {C}, 4, -0.5, 0.5))
      .in(values_of(param_dt, {C}, 5, 0.2, 2));
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda BatchNormalization: ranks, dtypes, parameter dtypes, opsets") {
    for (DType dt : {DType::F32, DType::F16}) {
      check_on_cuda(batch_norm_case(dt, dt, {2, 3, 5, 7}), "BatchNormalization");
      check_on_cuda(batch_norm_case(dt, dt, {3, 5}), "BatchNormalization");
      check_on_cuda(batch_norm_case(dt, dt, {1, 4, 3, 5, 6}, 9), "BatchNormalization");
      check_on_cuda(batch_norm_case(dt, DType::F32, {2, 3, 33}), "BatchNormalization");
    }
    check_on_cuda(batch_norm_case(DType::F32, DType::F32, {2, 3, 4}, 7), "BatchNormalization");
    check_on_cuda(batch_norm_case(DType::F32, DType::F32, {2, 3, 4}, 14), "BatchNormalization");
    check_on_cuda(batch_norm_case(DType::F32, DType::F32, {0, 3, 4}), "BatchNormalization");
    check_declined(batch_norm_case(DType::F32, DType::F32, {2, 3, 4}, 15).i("training_mode", 1).outs(3));
    CHECK_FALSE(support_of("BatchNormalization", 7, std::vector<DType>(5, DType::F32), {attr_i("spatial", 0)}).ok);
    CHECK_FALSE(support_of("BatchNormalization", 15, std::vector<DType>(5, DType::F64)).ok);
  }

  TEST_CASE("cuda InstanceNormalization: ranks, f16, parameter dtypes") {
    for (DType dt : {DType::F32, DType::F16})
      for (const auto& dims : std::vector<std::vector<int64_t>>{{2, 3, 5, 7}, {3, 4, 33}, {1, 2, 3, 4, 5}, {2, 3, 300}}) {
        INFO(ir::dtype_name(dt) << " rank " << dims.size());
        check_on_cuda(OpTest("InstanceNormalization", 6).f("epsilon", 1e-3f).in(values_of(dt, dims, 1, -3, 3))
                          .in(values_of(dt, {dims[1]}, 2, 0.5, 1.5)).in(values_of(dt, {dims[1]}, 3)),
                      "InstanceNormalization");
      }
    check_on_cuda(OpTest("InstanceNormalization", 22).in(values_of(DType::F16, {2, 3, 9}, 1))
                      .in(values_of(DType::F32, {3}, 2)).in(values_of(DType::F32, {3}, 3)),
                  "InstanceNormalization");
    check_on_cuda(OpTest("InstanceNormalization", 6).in(values_of(DType::F32, {0, 3, 9}, 1))
                      .in(values_of(DType::F32, {3}, 2)).in(values_of(DType::F32, {3}, 3)),
                  "InstanceNormalization");
  }

  TEST_CASE("cuda GroupNormalization: per-group and per-channel parameters, f16") {
    for (DType dt : {DType::F32, DType::F16})
      for (int64_t groups : {1, 2, 3, 6}) {
        INFO(ir::dtype_name(dt) << " groups " << groups);
        const std::vector<int64_t> dims = {2, 6, 5, 7};
        check_on_cuda(OpTest("GroupNormalization", 21).i("num_groups", groups).in(values_of(dt, dims, 1, -3, 3))
                          .in(values_of(dt, {6}, 2, 0.5, 1.5)).in(values_of(dt, {6}, 3)),
                      "GroupNormalization");
        check_on_cuda(OpTest("GroupNormalization", 18).i("num_groups", groups).f("epsilon", 1e-3f)
                          .in(values_of(dt, dims, 1, -3, 3)).in(values_of(dt, {groups}, 2, 0.5, 1.5))
                          .in(values_of(dt, {groups}, 3)),
                      "GroupNormalization");
      }
    check_on_cuda(OpTest("GroupNormalization", 21).i("num_groups", 2).in(values_of(DType::F32, {3, 4, 33}, 1))
                      .in(values_of(DType::F32, {4}, 2)).in(values_of(DType::F32, {4}, 3)),
                  "GroupNormalization");
    check_on_cuda(OpTest("GroupNormalization", 21).i("num_groups", 2).in(values_of(DType::F32, {0, 4, 3}, 1))
                      .in(values_of(DType::F32, {4}, 2)).in(values_of(DType::F32, {4}, 3)),
                  "GroupNormalization");
  }

  TEST_CASE("cuda LayerNormalization: axes, optional bias, Mean/InvStdDev, f16") {
    const std::vector<int64_t> dims = {3, 7, 33};
    for (DType dt : {DType::F32, DType::F16})
      for (int64_t axis : {-1, -2, 0, 1, 2}) {
        INFO(ir::dtype_name(dt) << " axis " << axis);
        const int64_t a = axis < 0 ? axis + 3 : axis;
        const std::vector<int64_t> norm(dims.begin() + a, dims.end());
        check_on_cuda(OpTest("LayerNormalization", 17).i("axis", axis).in(values_of(dt, dims, 1, -3, 3))
                          .in(values_of(dt, norm, 2, 0.5, 1.5)).in(values_of(dt, norm, 3)).outs(3),
                      "LayerNormalization");
        check_on_cuda(OpTest("LayerNormalization", 17).i("axis", axis).f("epsilon", 1e-2f)
                          .in(values_of(dt, dims, 1, -3, 3)).in(values_of(dt, norm, 2, 0.5, 1.5)),
                      "LayerNormalization");
      }
    // Scale and B broadcast over the normalized dims.
    check_on_cuda(OpTest("LayerNormalization", 17).i("axis", 1).in(values_of(DType::F32, {3, 7, 33}, 1))
                      .in(values_of(DType::F32, {33}, 2)).in(values_of(DType::F32, {7, 1}, 3)).outs(3),
                  "LayerNormalization");
    check_on_cuda(OpTest("LayerNormalization", 17).in(values_of(DType::F32, {5, 300}, 1, -10, 10))
                      .in(values_of(DType::F32, {300}, 2)).in(values_of(DType::F32, {1}, 3)),
                  "LayerNormalization");
    check_on_cuda(OpTest("LayerNormalization", 17).in(values_of(DType::F32, {0, 8}, 1))
                      .in(values_of(DType::F32, {8}, 2)).outs(2),
                  "LayerNormalization");
    CHECK_FALSE(support_of("LayerNormalization", 17, {DType::F32, DType::F32}, {attr_i("stash_type", 0)}).ok);
    check_declined(OpTest("LayerNormalization", 17).in(tensor_of<double>({2, 3}, {1, 2, 3, 4, 5, 6}))
                       .in(tensor_of<double>({3}, {1, 1, 1})));
  }

  TEST_CASE("cuda Softmax and LogSoftmax: opset 13 axes and opset 11 coerced 2-D") {
    const std::vector<int64_t> dims = {3, 7, 33};
    for (const char* op : {"Softmax", "LogSoftmax"})
      for (DType dt : {DType::F32, DType::F16}) {
        for (int64_t axis : {-1, 0, 1, 2, -3}) {
          INFO(op << " " << ir::dtype_name(dt) << " axis " << axis);
          check_on_cuda(OpTest(op, 13).i("axis", axis).in(values_of(dt, dims, 1, -5, 5)), op);
        }
        check_on_cuda(OpTest(op, 13).in(values_of(dt, dims, 1, -5, 5)), op);
        for (int64_t axis : {0, 1, 2, 3, -1}) {
          INFO(op << " " << ir::dtype_name(dt) << " legacy axis " << axis);
          check_on_cuda(OpTest(op, 11).i("axis", axis).in(values_of(dt, dims, 1, -5, 5)), op);
        }
        check_on_cuda(OpTest(op, 1).in(values_of(dt, dims, 1, -5, 5)), op);
        check_on_cuda(OpTest(op, 13).in(values_of(dt, {2, 1000}, 2, -20, 20)), op);
        check_on_cuda(OpTest(op, 13).in(values_of(dt, {0, 5}, 2)), op);
      }
    check_declined(OpTest("Softmax", 13).in(tensor_of<double>({2}, {1, 2})));
  }
}
