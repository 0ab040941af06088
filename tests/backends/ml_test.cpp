// ai.onnx.ml kernels: Binarizer, ArrayFeatureExtractor, LabelEncoder, TreeEnsemble. Expected
// values are worked out by hand from the ai.onnx.ml operator spec.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::DType;

namespace {
const char* kMl = "ai.onnx.ml";
ir::Tensor strs(std::vector<int64_t> dims, std::vector<std::string> v) {
  return ir::Tensor::from_strings(std::move(dims), std::move(v));
}
}  // namespace

TEST_CASE_TEMPLATE("Binarizer maps x > threshold to 1", T, float, double, int32_t, int64_t) {
  ir::Tensor y = OpTest("Binarizer", 1, kMl)
                     .f("threshold", 1.0f)
                     .in(tensor_of<T>({2, 2}, {0, 1, 2, -3}))
                     .run1();
  CHECK(y.dtype() == ir::dtype_of<T>());
  check_tensor(y, {2, 2}, {0, 0, 1, 0});
}

TEST_CASE("Binarizer: NaN is not above the threshold; strings are rejected") {
  check_tensor(OpTest("Binarizer", 1, kMl).in(vec<float>({NAN, 0.5f})).run1(), {2}, {0, 1});
  CHECK_THROWS_AS(OpTest("Binarizer", 1, kMl).in(strs({1}, {"a"})).run1(), UnsupportedError);
}

TEST_CASE("ArrayFeatureExtractor picks columns of the last axis") {
  const auto x = tensor<float>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  check_tensor(OpTest("ArrayFeatureExtractor", 1, kMl).in(x).in(vec<int64_t>({0, 3, 3})).run1(),
               {3, 3}, {0, 3, 3, 4, 7, 7, 8, 11, 11});
  // A 1-D input gives one row; strings work too.
  ir::Tensor s = OpTest("ArrayFeatureExtractor", 1, kMl)
                     .in(strs({3}, {"a", "b", "c"}))
                     .in(vec<int64_t>({2}))
                     .run1();
  CHECK(s.dims() == std::vector<int64_t>{1, 1});
  CHECK(s.strings() == std::vector<std::string>{"c"});
  check_tensor(OpTest("ArrayFeatureExtractor", 1, kMl)
                   .in(vec<int32_t>({5, 6}))
                   .in(vec<int64_t>({1, 0}))
                   .run1(),
               {1, 2}, {6, 5});
  CHECK_THROWS_AS(OpTest("ArrayFeatureExtractor", 1, kMl).in(x).in(vec<int64_t>({4})).run1(),
                  ModelError);
}

TEST_CASE("LabelEncoder maps strings to ints with a default") {
  ir::Tensor y = OpTest("LabelEncoder", 4, kMl)
                     .ss("keys_strings", {"a", "b", "c"})
                     .is("values_int64s", {0, 1, 2})
                     .i("default_int64", 42)
                     .in(strs({5}, {"a", "b", "d", "c", "g"}))
                     .run1();
  CHECK(y.dtype() == DType::I64);
  check_tensor(y, {5}, {0, 1, 42, 2, 42});
  // Spec default: -1.
  check_tensor(OpTest("LabelEncoder", 2, kMl)
                   .ss("keys_strings", {"a"})
                   .is("values_int64s", {7})
                   .in(strs({2}, {"a", "z"}))
                   .run1(),
               {2}, {7, -1});
}

TEST_CASE("LabelEncoder with tensor keys/values, float keys and string values") {
  ir::Tensor y = OpTest("LabelEncoder", 4, kMl)
                     .t("keys_tensor", vec<int32_t>({1, 2, 3}))
                     .t("values_tensor", vec<int16_t>({10, 20, 30}))
                     .t("default_tensor", vec<int16_t>({-5}))
                     .in(tensor<int32_t>({2, 2}, {3, 4, 1, 2}))
                     .run1();
  CHECK(y.dtype() == DType::I16);
  check_tensor(y, {2, 2}, {30, -5, 10, 20});
  // Float keys: NaN matches NaN; repeated keys: the last wins; default string "_Unused".
  ir::Tensor s = OpTest("LabelEncoder", 2, kMl)
                     .fs("keys_floats", {1.5f, NAN, 1.5f})
                     .ss("values_strings", {"x", "nan", "y"})
                     .in(vec<float>({1.5f, NAN, 0.0f}))
                     .run1();
  CHECK(s.strings() == std::vector<std::string>{"y", "nan", "_Unused"});
  // Opset 1: classes_strings both ways.
  ir::Tensor idx = OpTest("LabelEncoder", 1, kMl)
                       .ss("classes_strings", {"a", "b"})
                       .in(strs({3}, {"b", "a", "q"}))
                       .run1();
  check_tensor(idx, {3}, {1, 0, -1});
  ir::Tensor lab = OpTest("LabelEncoder", 1, kMl)
                       .ss("classes_strings", {"a", "b"})
                       .in(vec<int64_t>({1, 5}))
                       .run1();
  CHECK(lab.strings() == std::vector<std::string>{"b", "_Unused"});
}

TEST_CASE("LabelEncoder rejects mismatched keys, values and input") {
  CHECK_THROWS_AS(OpTest("LabelEncoder", 2, kMl)
                      .ss("keys_strings", {"a", "b"})
                      .is("values_int64s", {1})
                      .in(strs({1}, {"a"}))
                      .run1(),
                  ModelError);
  CHECK_THROWS_AS(
      OpTest("LabelEncoder", 2, kMl).is("values_int64s", {1}).in(strs({1}, {"a"})).run1(),
      ModelError);
  CHECK_THROWS_AS(OpTest("LabelEncoder", 2, kMl)
                      .ss("keys_strings", {"a"})
                      .is("values_int64s", {1})
                      .in(vec<float>({1}))
                      .run1(),
                  ModelError);
}

namespace {
/// One tree: node 0 tests x[0] <= 3.14 (true -> node 1, false -> node 2); node 1 x[0] <= 1.2
/// (leaves 0 / 1); node 2 x[0] <= 4.2 (leaves 2 / 3). Leaves 0 and 2 feed target 0, 1 and 3
/// target 1.
OpTest single_tree(ir::Tensor x, int64_t aggregate = 1, int64_t post = 0) {
  return OpTest("TreeEnsemble", 5, kMl)
      .i("aggregate_function", aggregate)
      .i("post_transform", post)
      .i("n_targets", 2)
      .is("leaf_targetids", {0, 1, 0, 1})
      .t("leaf_weights", vec<double>({5.23, 12.12, -12.23, 7.21}))
      .is("nodes_falseleafs", {0, 1, 1})
      .is("nodes_falsenodeids", {2, 1, 3})
      .is("nodes_featureids", {0, 0, 0})
      .t("nodes_modes", vec<uint8_t>({0, 0, 0}))
      .t("nodes_splits", vec<double>({3.14, 1.2, 4.2}))
      .is("nodes_trueleafs", {0, 1, 1})
      .is("nodes_truenodeids", {1, 0, 2})
      .is("tree_roots", {0})
      .in(std::move(x));
}
}  // namespace

TEST_CASE("TreeEnsemble routes rows through a tree and sums leaf weights per target") {
  // 1.2 -> node 1, 1.2 <= 1.2 -> leaf 0 (5.23 on target 0); 2.0 -> leaf 1 (12.12 on target 1);
  // 4.0 -> node 2 -> leaf 2 (-12.23 on target 0); 5.0 -> leaf 3 (7.21 on target 1).
  ir::Tensor y = single_tree(tensor<double>({4, 1}, {1.2, 2.0, 4.0, 5.0})).run1();
  CHECK(y.dtype() == DType::F64);
  check_tensor(y, {4, 2}, {5.23, 0, 0, 12.12, -12.23, 0, 0, 7.21});
  // f32 input, MAX aggregation: an unreached target keeps the lowest float.
  ir::Tensor mx = single_tree(tensor<float>({1, 1}, {1.0f}), 3).run1();
  CHECK(values(mx)[0] == doctest::Approx(5.23).epsilon(1e-6));
  CHECK(values(mx)[1] == -static_cast<double>(std::numeric_limits<float>::max()));
  // LOGISTIC post transform.
  ir::Tensor lg = single_tree(tensor<float>({1, 1}, {1.0f}), 1, 2).run1();
  check_tensor(lg, {1, 2}, {1.0 / (1.0 + std::exp(-5.23)), 0.5});
  // SOFTMAX over the targets.
  ir::Tensor sm = single_tree(tensor<float>({1, 1}, {2.0f}), 1, 1).run1();
  check_tensor(sm, {1, 2}, {1.0 / (1.0 + std::exp(12.12)), 1.0 / (1.0 + std::exp(-12.12))});
}

TEST_CASE("TreeEnsemble set membership and missing-value tracking") {
  // Root: x[0] in {1.2, 3.7} -> leaf 0, else node 1: x[0] in {7} -> leaf 1 else leaf 2. NaN goes
  // true at the root (missing value tracks true).
  auto run = [](ir::Tensor x) {
    return OpTest("TreeEnsemble", 5, kMl)
        .i("n_targets", 3)
        .is("leaf_targetids", {0, 1, 2})
        .t("leaf_weights", vec<float>({1, 10, 100}))
        .t("membership_values", vec<float>({1.2f, 3.7f, NAN, 7.0f, NAN}))
        .is("nodes_falseleafs", {0, 1})
        .is("nodes_falsenodeids", {1, 2})
        .is("nodes_featureids", {0, 0})
        .t("nodes_modes", vec<uint8_t>({6, 6}))
        .t("nodes_splits", vec<float>({0, 0}))
        .is("nodes_trueleafs", {1, 1})
        .is("nodes_truenodeids", {0, 1})
        .is("nodes_missing_value_tracks_true", {1, 0})
        .is("tree_roots", {0})
        .in(std::move(x))
        .run1();
  };
  check_tensor(run(tensor<float>({4, 1}, {3.7f, 7.0f, 8.0f, NAN})), {4, 3},
               {1, 0, 0, 0, 10, 0, 0, 0, 100, 1, 0, 0});
}

TEST_CASE("TreeEnsemble rejects malformed trees") {
  CHECK_THROWS_AS(OpTest("TreeEnsemble", 5, kMl)
                      .i("n_targets", 1)
                      .is("leaf_targetids", {0})
                      .t("leaf_weights", vec<float>({1}))
                      .is("nodes_falseleafs", {1})
                      .is("nodes_falsenodeids", {3})  // leaf 3 does not exist
                      .is("nodes_featureids", {0})
                      .t("nodes_modes", vec<uint8_t>({0}))
                      .t("nodes_splits", vec<float>({0}))
                      .is("nodes_trueleafs", {1})
                      .is("nodes_truenodeids", {0})
                      .is("tree_roots", {0})
                      .in(tensor<float>({1, 1}, {0}))
                      .run1(),
                  ModelError);
  CHECK_THROWS_AS(single_tree(tensor<float>({1, 1}, {0}), 7).run1(), ModelError);
}
