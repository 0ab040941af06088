// The cuda backend's Gemm against the cpu: transA/transB, alpha/beta, every C broadcast, f16,
// empty and K == 0 products, and what stays on the cpu.
#include <doctest/doctest.h>

#include "backends/cuda/cuda_test_util.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_test;

namespace {

// Gemm of an M x K by K x N product stored as the trans flags say, with C of dims c_dims.
OpTest gemm_case(ir::DType dt, int64_t M, int64_t N, int64_t K, bool ta, bool tb,
                 std::vector<int64_t> c_dims, float alpha, float beta, int opset = 13) {
  OpTest t("Gemm", opset);
  t.i("transA", ta).i("transB", tb).f("alpha", alpha).f("beta", beta);
  t.in(random_of(dt, ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, 1));
  t.in(random_of(dt, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 2));
  if (c_dims.size() == 1 && c_dims[0] < 0) return t;  // no C
  t.in(random_of(dt, c_dims, 3));
  return t;
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda Gemm: trans variants on odd shapes, f32 and f16") {
    for (ir::DType dt : {ir::DType::F32, ir::DType::F16})
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
          INFO("dtype " << ir::dtype_name(dt) << " transA " << ta << " transB " << tb);
          check_on_cuda(gemm_case(dt, 7, 13, 5, ta, tb, {7, 13}, 0.75f, 1.25f), "Gemm");
        }
  }

  TEST_CASE("cuda Gemm: C broadcast shapes") {
    const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {13}, {1, 13}, {7, 1}, {7, 13}, {1, 1}};
    for (ir::DType dt : {ir::DType::F32, ir::DType::F16})
      for (const auto& c : shapes) {
        INFO("dtype " << ir::dtype_name(dt) << " C rank " << c.size());
        check_on_cuda(gemm_case(dt, 7, 13, 9, false, true, c, 1.f, 0.5f), "Gemm");
      }
  }

  TEST_CASE("cuda Gemm: no C, beta 0, opsets 7 and 11") {
    check_on_cuda(gemm_case(ir::DType::F32, 4, 6, 3, false, false, {-1}, 2.f, 1.f, 11), "Gemm");
    check_on_cuda(gemm_case(ir::DType::F32, 4, 6, 3, true, false, {4, 6}, 1.f, 0.f), "Gemm");
    check_on_cuda(gemm_case(ir::DType::F32, 4, 6, 3, false, true, {6}, 1.f, 1.f, 7), "Gemm");
  }

  TEST_CASE("cuda Gemm: empty outputs and K == 0") {
    check_on_cuda(gemm_case(ir::DType::F32, 0, 5, 3, false, false, {5}, 1.f, 1.f), "Gemm");
    check_on_cuda(gemm_case(ir::DType::F32, 4, 0, 3, false, false, {0}, 1.f, 1.f), "Gemm");
    check_on_cuda(gemm_case(ir::DType::F32, 4, 5, 0, false, false, {1, 5}, 1.f, 2.f), "Gemm");
    check_on_cuda(gemm_case(ir::DType::F16, 4, 5, 0, true, true, {-1}, 1.f, 1.f), "Gemm");
  }

  TEST_CASE("cuda Gemm: larger product through the blas path") {
    check_on_cuda(gemm_case(ir::DType::F32, 65, 33, 129, true, true, {33}, 1.f, 1.f), "Gemm");
  }

  TEST_CASE("cuda Gemm: declined dtypes and opsets stay on the cpu") {
    OpTest d("Gemm", 13);
    d.in(tensor<double>({2, 2}, {1, 2, 3, 4})).in(tensor<double>({2, 2}, {1, 0, 0, 1}));
    check_declined(d);
    OpTest old("Gemm", 6);
    old.in(random_of(ir::DType::F32, {2, 3}, 1)).in(random_of(ir::DType::F32, {3, 2}, 2))
        .in(random_of(ir::DType::F32, {2}, 3));
    check_declined(old);
    CHECK_FALSE(support_of("Gemm", 13, {ir::DType::F32, ir::DType::F32, ir::DType::F16}).ok);
    CHECK_FALSE(support_of("Gemm", 13, {ir::DType::F32, ir::DType::Undefined}).ok);
    CHECK_FALSE(support_of("Gemm", 13, {ir::DType::BF16, ir::DType::BF16}).ok);
    CHECK(support_of("Gemm", 13, {ir::DType::F16, ir::DType::F16}).ok);
  }
}
