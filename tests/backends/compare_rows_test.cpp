// backends::compare_tensors on rows: per-row cosines along the last axis, and embeddings (reference
// rows of unit L2 norm) told apart from class scores, which alone get a top-1 verdict.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "backends/compare.h"

using mcc::backends::compare_tensors;
using mcc::backends::Tolerance;
using mcc::ir::Tensor;

TEST_CASE("compare: row cosines along the last axis; unit-norm rows are embeddings, not class scores") {
  // Two unit rows; the second row of `got` is rotated by 0.1 rad.
  const std::vector<float> want = {1, 0, 0, 0, 1, 0};
  const float c = std::cos(0.1f), s = std::sin(0.1f);
  const std::vector<float> got = {1, 0, 0, 0, c, s};
  const auto m = compare_tensors(Tensor::from_vector<float>({2, 3}, got), Tensor::from_vector<float>({2, 3}, want), Tolerance{});
  CHECK(m.rows == 2);
  CHECK(m.row_cosine_min == doctest::Approx(std::cos(0.1)).epsilon(1e-6));
  CHECK(m.row_cosine_mean() == doctest::Approx((1 + std::cos(0.1)) / 2).epsilon(1e-6));
  CHECK_FALSE(m.top1_agree.has_value());

  // Scores (rows not of unit norm) keep their top-1 verdict; argmax of row 1 differs here.
  const std::vector<float> scores = {3, 1, 0, 0, 2, 1}, moved = {3, 1, 0, 0, 1, 2};
  const auto k = compare_tensors(Tensor::from_vector<float>({2, 3}, moved), Tensor::from_vector<float>({2, 3}, scores), Tolerance{});
  REQUIRE(k.top1_agree.has_value());
  CHECK_FALSE(*k.top1_agree);
  CHECK(k.rows == 2);
  CHECK(k.row_cosine_min < 1.0);

  // A last axis of 1 has no rows to compare.
  const auto one = compare_tensors(Tensor::from_vector<float>({3, 1}, {1, 2, 3}), Tensor::from_vector<float>({3, 1}, {1, 2, 3}), Tolerance{});
  CHECK(one.rows == 0);
}
