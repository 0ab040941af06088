// The cuda backend's MatMul against the cpu: plain and batched products, every batch broadcast
// pattern (stride 0 sides, shared B folded into rows, mixed broadcasts looped), 1-D operands,
// f16, empty dims and K == 0, and what stays on the cpu.
#include <doctest/doctest.h>

#include "backends/cuda/cuda_test_util.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_test;

namespace {

void check_matmul(ir::DType dt, std::vector<int64_t> a, std::vector<int64_t> b, int opset = 13) {
  INFO("dtype " << ir::dtype_name(dt) << " A rank " << a.size() << " B rank " << b.size());
  OpTest t("MatMul", opset);
  t.in(random_of(dt, a, 11)).in(random_of(dt, b, 12));
  check_on_cuda(t, "MatMul");
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda MatMul: 2-D odd shapes, f32 and f16, opsets 1, 9, 13") {
    for (ir::DType dt : {ir::DType::F32, ir::DType::F16}) {
      check_matmul(dt, {7, 13}, {13, 5});
      check_matmul(dt, {1, 1}, {1, 1});
      check_matmul(dt, {33, 70}, {70, 17}, 9);
    }
    check_matmul(ir::DType::F32, {3, 4}, {4, 2}, 1);
  }

  TEST_CASE("cuda MatMul: batch dims and their broadcasting") {
    for (ir::DType dt : {ir::DType::F32, ir::DType::F16}) {
      check_matmul(dt, {3, 7, 13}, {3, 13, 5});        // same batch
      check_matmul(dt, {3, 7, 13}, {13, 5});           // shared B: rows of one gemm
      check_matmul(dt, {7, 13}, {4, 13, 5});           // shared A: stride 0
      check_matmul(dt, {2, 1, 7, 13}, {1, 3, 13, 5});  // mixed: looped
      check_matmul(dt, {2, 3, 7, 13}, {3, 13, 5});     // B broadcast over the leading dim
      check_matmul(dt, {2, 3, 7, 13}, {2, 1, 13, 5});  // B broadcast over the trailing dim
      check_matmul(dt, {1, 3, 4, 7, 6}, {2, 1, 4, 6, 3});
      check_matmul(dt, {1, 1, 7, 13}, {13, 5});        // size-1 batch dims
    }
  }

  TEST_CASE("cuda MatMul: 1-D operands") {
    for (ir::DType dt : {ir::DType::F32, ir::DType::F16}) {
      check_matmul(dt, {13}, {13, 5});
      check_matmul(dt, {7, 13}, {13});
      check_matmul(dt, {13}, {13});
      check_matmul(dt, {13}, {3, 13, 5});
      check_matmul(dt, {2, 3, 7, 13}, {13});
    }
  }

  TEST_CASE("cuda MatMul: empty dims and K == 0") {
    check_matmul(ir::DType::F32, {0, 13}, {13, 5});
    check_matmul(ir::DType::F32, {7, 13}, {13, 0});
    check_matmul(ir::DType::F32, {0, 7, 13}, {13, 5});
    check_matmul(ir::DType::F32, {3, 7, 13}, {1, 13, 5});
    check_matmul(ir::DType::F32, {7, 0}, {0, 5});
    check_matmul(ir::DType::F16, {2, 7, 0}, {2, 0, 5});
    check_matmul(ir::DType::F32, {0}, {0});
  }

  TEST_CASE("cuda MatMul: declined dtypes stay on the cpu") {
    OpTest t("MatMul", 13);
    t.in(tensor<int32_t>({2, 2}, {1, 2, 3, 4})).in(tensor<int32_t>({2, 2}, {1, 0, 0, 1}));
    check_declined(t);
    CHECK_FALSE(support_of("MatMul", 13, {ir::DType::F32, ir::DType::F16}).ok);
    CHECK_FALSE(support_of("MatMul", 13, {ir::DType::Undefined, ir::DType::F32}).ok);
    CHECK_FALSE(support_of("MatMul", 13, {ir::DType::F64, ir::DType::F64}).ok);
  }
}
