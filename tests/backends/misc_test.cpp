// Kernel tests of the misc family: losses, detection, signal, linear algebra, text, training
// and random ops. Expected values come from the ONNX operator documentation examples or are
// computed by hand in the comments next to them.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;

// ------------------------------------------------------------------------------------- losses

TEST_CASE("NegativeLogLikelihoodLoss: none, sum, mean, weights and a negative ignore_index") {
  // input [2, 3] (log-probabilities), target [2]; loss_i = -x[i, t_i] * w[t_i].
  const auto x = tensor_of<float>({2, 3}, {-1, -2, -3, -4, -5, -6});
  const auto t = tensor<int64_t>({2}, {2, 0});
  CHECK(max_diff(OpTest("NegativeLogLikelihoodLoss", 13).in(x).in(t).s("reduction", "none").run1(), {3, 4}) < 1e-6);
  CHECK(max_diff(OpTest("NegativeLogLikelihoodLoss", 13).in(x).in(t).s("reduction", "sum").run1(), {7}) < 1e-6);
  CHECK(max_diff(OpTest("NegativeLogLikelihoodLoss", 13).in(x).in(t).run1(), {3.5}) < 1e-6);
  // Weighted mean: (3*0.5 + 4*2) / (0.5 + 2) = 3.8.
  const auto w = tensor_of<float>({3}, {2, 1, 0.5});
  CHECK(max_diff(OpTest("NegativeLogLikelihoodLoss", 13).in(x).in(t).in(w).run1(), {3.8}) < 1e-6);
  // ignore_index -1 drops the second element from both sums: mean = 3.
  const auto ti = tensor<int64_t>({2}, {2, -1});
  const auto y = OpTest("NegativeLogLikelihoodLoss", 13).in(x).in(ti).i("ignore_index", -1).run1();
  CHECK(y.rank() == 0);
  CHECK(max_diff(y, {3}) < 1e-6);
}

TEST_CASE("NegativeLogLikelihoodLoss: N-d input keeps the target shape with reduction none") {
  // input [1, 2, 2] ([N, C, d1]), target [1, 2].
  const auto x = tensor_of<float>({1, 2, 2}, {-1, -2, -3, -4});
  const auto y = OpTest("NegativeLogLikelihoodLoss", 22).in(x).in(tensor<int64_t>({1, 2}, {1, 0})).s("reduction", "none").run1();
  CHECK(y.dims() == std::vector<int64_t>{1, 2});
  CHECK(max_diff(y, {3, 2}) < 1e-6);
}

TEST_CASE_TEMPLATE("SoftmaxCrossEntropyLoss computes log-softmax and the optional log_prob", T, float, mcc::f16, double) {
  // scores [[0, 0], [0, ln 3]]: log-softmax rows are [-ln2, -ln2] and [-ln4, ln3 - ln4].
  const double l2 = std::log(2.0), l3 = std::log(3.0), l4 = std::log(4.0);
  const auto x = tensor_of<T>({2, 2}, {0, 0, 0, l3});
  const auto r = OpTest("SoftmaxCrossEntropyLoss", 13).in(x).in(tensor<int64_t>({2}, {0, 1})).outs(2).run();
  const double tol = std::is_same_v<T, mcc::f16> ? 2e-3 : 1e-6;
  CHECK(r[0].dtype() == x.dtype());
  CHECK(max_diff(r[0], {(l2 + (l4 - l3)) / 2}) < tol);
  CHECK(max_diff(r[1], {-l2, -l2, -l4, l3 - l4}) < tol);
}

TEST_CASE("loss kernels reject a bad reduction and out-of-range targets") {
  const auto x = tensor_of<float>({2, 3}, {-1, -2, -3, -4, -5, -6});
  CHECK_THROWS_AS(OpTest("SoftmaxCrossEntropyLoss", 13).in(x).in(tensor<int64_t>({2}, {0, 1})).s("reduction", "avg").run(), mcc::ModelError);
  CHECK_THROWS_AS(OpTest("NegativeLogLikelihoodLoss", 13).in(x).in(tensor<int64_t>({2}, {0, 3})).run(), mcc::ModelError);
}

// ------------------------------------------------------------------------------------- detection

TEST_CASE("NonMaxSuppression: the ONNX suppress_by_IOU example and center_point_box") {
  const auto boxes = tensor_of<float>({1, 6, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, -0.1, 1, 0.9, 0, 10, 1, 11, 0, 10.1, 1, 11.1, 0, 100, 1, 101});
  const auto scores = tensor_of<float>({1, 1, 6}, {0.9, 0.75, 0.6, 0.95, 0.5, 0.3});
  auto y = OpTest("NonMaxSuppression", 11).in(boxes).in(scores).in(tensor<int64_t>({1}, {3})).in(tensor_of<float>({1}, {0.5})).in(tensor_of<float>({1}, {0})).run1();
  CHECK(y.dims() == std::vector<int64_t>{3, 3});
  CHECK(values(y) == std::vector<double>{0, 0, 3, 0, 0, 0, 0, 0, 5});
  // The same boxes as (x_center, y_center, width, height).
  const auto cboxes = tensor_of<float>({1, 6, 4}, {0.5, 0.5, 1, 1, 0.5, 0.6, 1, 1, 0.5, 0.4, 1, 1, 0.5, 10.5, 1, 1, 0.5, 10.6, 1, 1, 0.5, 100.5, 1, 1});
  y = OpTest("NonMaxSuppression", 11).in(cboxes).in(scores).in(tensor<int64_t>({1}, {3})).in(tensor_of<float>({1}, {0.5})).in(tensor_of<float>({1}, {0})).i("center_point_box", 1).run1();
  CHECK(values(y) == std::vector<double>{0, 0, 3, 0, 0, 0, 0, 0, 5});
  // Without max_output_boxes_per_class nothing is selected.
  y = OpTest("NonMaxSuppression", 11).in(boxes).in(scores).run1();
  CHECK(y.dims() == std::vector<int64_t>{0, 3});
  CHECK_THROWS_AS(OpTest("NonMaxSuppression", 11).in(boxes).in(tensor_of<float>({1, 1, 5}, {1, 1, 1, 1, 1})).run(), mcc::ModelError);
}

TEST_CASE("RoiAlign averages bilinear samples with half_pixel and output_half_pixel") {
  // X = [[0, 1], [2, 3]]. half_pixel, roi [0,0,2,2], one sample at (0.5, 0.5): mean of all = 1.5.
  const auto x = tensor_of<float>({1, 1, 2, 2}, {0, 1, 2, 3});
  const auto rois = tensor_of<float>({1, 4}, {0, 0, 2, 2});
  auto y = OpTest("RoiAlign", 16).in(x).in(rois).in(tensor<int64_t>({1}, {0})).i("sampling_ratio", 1).run1();
  CHECK(y.dims() == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(max_diff(y, {1.5}) < 1e-6);
  // output_half_pixel (the opset-10 behaviour): the sample sits at (1, 1) -> 3.
  y = OpTest("RoiAlign", 10).in(x).in(rois).in(tensor<int64_t>({1}, {0})).i("sampling_ratio", 1).run1();
  CHECK(max_diff(y, {3}) < 1e-6);
  // max mode with 2x2 output over [0,0,2,2] in half_pixel samples each pixel centre once.
  y = OpTest("RoiAlign", 16).in(x).in(rois).in(tensor<int64_t>({1}, {0})).i("sampling_ratio", 1).i("output_height", 2).i("output_width", 2).s("mode", "max").run1();
  CHECK(max_diff(y, {0, 1, 2, 3}) < 1e-6);
  CHECK_THROWS_AS(OpTest("RoiAlign", 16).in(x).in(rois).in(tensor<int64_t>({1}, {1})).run(), mcc::ModelError);
  CHECK_THROWS_AS(OpTest("RoiAlign", 16).in(x).in(tensor_of<float>({1, 4}, {0, 0, NAN, 2})).in(tensor<int64_t>({1}, {0})).run(), mcc::ModelError);
}

TEST_CASE_TEMPLATE("GridSample: an identity grid reproduces the input, padding modes outside", T, float, mcc::f16) {
  // 2x2 image; align_corners=1 maps -1 and 1 onto pixel centres.
  const auto x = tensor_of<T>({1, 1, 2, 2}, {1, 2, 3, 4});
  const auto grid = tensor_of<float>({1, 2, 2, 2}, {-1, -1, 1, -1, -1, 1, 1, 1});
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    const auto y = OpTest("GridSample", 16).in(x).in(grid).i("align_corners", 1).s("mode", mode).run1();
    CHECK(max_diff(y, {1, 2, 3, 4}) < 1e-3);
  }
  // A point far right of the image: zeros -> 0, border -> right column value at mid height.
  const auto far = tensor_of<float>({1, 1, 1, 2}, {5, 0});
  CHECK(max_diff(OpTest("GridSample", 20).in(x).in(far).i("align_corners", 1).run1(), {0}) < 1e-3);
  CHECK(max_diff(OpTest("GridSample", 20).in(x).in(far).i("align_corners", 1).s("padding_mode", "border").run1(), {3}) < 1e-3);
  // A NaN coordinate samples the zero padding instead of reading out of bounds.
  CHECK(max_diff(OpTest("GridSample", 20).in(x).in(tensor_of<float>({1, 1, 1, 2}, {NAN, 0})).run1(), {0}) < 1e-3);
  CHECK_THROWS_AS(OpTest("GridSample", 16).in(x).in(grid).s("mode", "area").run(), mcc::ModelError);
}

// ------------------------------------------------------------------------------------- signal

TEST_CASE("window functions: periodic and symmetric, output_datatype") {
  CHECK(max_diff(OpTest("HannWindow", 17).in(scalar<int64_t>(4)).run1(), {0, 0.5, 1, 0.5}) < 1e-6);
  CHECK(max_diff(OpTest("HannWindow", 17).in(scalar<int64_t>(3)).i("periodic", 0).run1(), {0, 1, 0}) < 1e-6);
  const double a = 25.0 / 46.0;
  const auto h = OpTest("HammingWindow", 17).in(scalar<int64_t>(2)).i("output_datatype", 11).run1();
  CHECK(h.dtype() == ir::DType::F64);
  CHECK(max_diff(h, {a - (1 - a), a + (1 - a)}) < 1e-12);
  CHECK(max_diff(OpTest("BlackmanWindow", 17).in(scalar<int64_t>(3)).i("periodic", 0).run1(), {0, 1, 0}) < 1e-6);
}

TEST_CASE("DFT: real and complex input, onesided, inverse, axis attribute and input") {
  // DFT of [1, 2, 3, 4] = [10, -2+2i, -2, -2-2i].
  const auto x = tensor_of<float>({1, 4, 1}, {1, 2, 3, 4});
  auto y = OpTest("DFT", 17).in(x).run1();
  CHECK(y.dims() == std::vector<int64_t>{1, 4, 2});
  CHECK(max_diff(y, {10, 0, -2, 2, -2, 0, -2, -2}) < 1e-5);
  y = OpTest("DFT", 17).in(x).i("onesided", 1).run1();
  CHECK(max_diff(y, {10, 0, -2, 2, -2, 0}) < 1e-5);
  // Inverse of the full spectrum gives the signal back; inverse onesided gives real output.
  const auto spec = tensor_of<float>({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  CHECK(max_diff(OpTest("DFT", 17).in(spec).i("inverse", 1).run1(), {1, 0, 2, 0, 3, 0, 4, 0}) < 1e-5);
  const auto half = tensor_of<float>({1, 3, 2}, {10, 0, -2, 2, -2, 0});
  y = OpTest("DFT", 20).in(half).none().in(scalar<int64_t>(1)).i("inverse", 1).i("onesided", 1).run1();
  CHECK(y.dims() == std::vector<int64_t>{1, 4, 1});
  CHECK(max_diff(y, {1, 2, 3, 4}) < 1e-5);
  // dft_length 2 truncates: DFT of [1, 2] = [3, -1].
  CHECK(max_diff(OpTest("DFT", 17).in(x).in(scalar<int64_t>(2)).run1(), {3, 0, -1, 0}) < 1e-5);
  CHECK_THROWS_AS(OpTest("DFT", 17).in(x).i("axis", 2).run(), mcc::ModelError);
  // Power-of-two lengths take the FFT path: cos(2*pi*n/8) has X[1] = X[7] = 4, on axis 2 here.
  std::vector<double> c8;
  for (int k = 0; k < 8; ++k) c8.push_back(std::cos(2 * 3.14159265358979 * k / 8));
  y = OpTest("DFT", 20).in(tensor_of<float>({1, 1, 8, 1}, c8)).none().in(scalar<int64_t>(2)).run1();
  CHECK(y.dims() == std::vector<int64_t>{1, 1, 8, 2});
  CHECK(max_diff(y, {0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0}) < 1e-5);
}

TEST_CASE("STFT frames the signal and MelWeightMatrix builds triangles") {
  // signal [1, 4, 1] = [1, 2, 3, 4], frame 2, step 2: frames [1,2], [3,4] -> onesided bins [3, -1], [7, -1].
  const auto y = OpTest("STFT", 17).in(tensor_of<float>({1, 4, 1}, {1, 2, 3, 4})).in(scalar<int64_t>(2)).none().in(scalar<int64_t>(2)).run1();
  CHECK(y.dims() == std::vector<int64_t>{1, 2, 2, 2});
  CHECK(max_diff(y, {3, 0, -1, 0, 7, 0, -1, 0}) < 1e-5);
  const auto m = OpTest("MelWeightMatrix", 17).in(scalar<int64_t>(8)).in(scalar<int64_t>(16)).in(scalar<int64_t>(8192)).in(tensor_of<float>({}, {0})).in(tensor_of<float>({}, {4096})).run1();
  CHECK(m.dims() == std::vector<int64_t>{9, 8});
  for (double v : values(m)) CHECK((v >= 0 && v <= 1));
}

// ------------------------------------------------------------------------------------- linalg

TEST_CASE_TEMPLATE("Det of a single and a batched matrix", T, float, double, mcc::f16) {
  auto y = OpTest("Det", 11).in(tensor_of<T>({2, 2}, {1, 2, 3, 4})).run1();
  CHECK(y.rank() == 0);
  CHECK(max_diff(y, {-2}) < 1e-3);
  // [[0, 1], [1, 0]] needs a pivot swap: det -1; a 3x3 diagonal: 24.
  y = OpTest("Det", 11).in(tensor_of<T>({2, 3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1, 2, 0, 0, 0, 3, 0, 0, 0, 4})).run1();
  CHECK(max_diff(y, {-1, 24}) < 1e-3);
  CHECK_THROWS_AS(OpTest("Det", 11).in(tensor_of<T>({2, 3}, {1, 2, 3, 4, 5, 6})).run(), mcc::ModelError);
}

// ------------------------------------------------------------------------------------- text

TEST_CASE("StringNormalizer removes stopwords and changes case") {
  const auto x = ir::Tensor::from_strings({4}, {"monday", "tuesday", "Monday", "wednesday"});
  auto y = OpTest("StringNormalizer", 10).in(x).ss("stopwords", {"monday"}).s("case_change_action", "UPPER").run1();
  CHECK(y.strings() == std::vector<std::string>{"TUESDAY", "WEDNESDAY"});
  y = OpTest("StringNormalizer", 10).in(x).ss("stopwords", {"monday"}).i("is_case_sensitive", 1).run1();
  CHECK(y.strings() == std::vector<std::string>{"tuesday", "Monday", "wednesday"});
  const auto two = ir::Tensor::from_strings({1, 1}, {"monday"});
  y = OpTest("StringNormalizer", 10).in(two).ss("stopwords", {"monday"}).run1();
  CHECK(y.dims() == std::vector<int64_t>{1, 1});
  CHECK(y.strings() == std::vector<std::string>{""});
  CHECK_THROWS_AS(OpTest("StringNormalizer", 10).in(x).s("case_change_action", "TITLE").run(), mcc::ModelError);
}

TEST_CASE("TfIdfVectorizer counts unigrams and skip-bigrams") {
  // pool: unigrams {2, 3}, bigrams {(2, 3)}; input [2, 3, 5, 2, 3].
  auto node = [](int64_t min_g, int64_t max_g, int64_t skip, const char* mode) {
    return OpTest("TfIdfVectorizer", 9)
        .s("mode", mode).i("min_gram_length", min_g).i("max_gram_length", max_g).i("max_skip_count", skip)
        .is("ngram_counts", {0, 2}).is("ngram_indexes", {0, 1, 2}).is("pool_int64s", {2, 3, 2, 3});
  };
  const auto x = ir::Tensor::from_vector<int32_t>({5}, {2, 3, 5, 2, 3});
  CHECK(values(node(1, 2, 0, "TF").in(x).run1()) == std::vector<double>{2, 2, 2});
  // With skips of 1 and 2 the spaced pairs are (2,5), (3,2), (5,3), (2,2), (3,3): none is in the
  // pool, and unigrams are still counted once.
  CHECK(values(node(1, 2, 2, "TF").in(x).run1()) == std::vector<double>{2, 2, 2});
  CHECK(values(node(2, 2, 0, "TF").in(x).run1()) == std::vector<double>{0, 0, 2});
  const auto y = node(1, 1, 0, "TFIDF").fs("weights", {0.5, 2, 1}).in(ir::Tensor::from_vector<int64_t>({2, 2}, {2, 2, 3, 5})).run1();
  CHECK(y.dims() == std::vector<int64_t>{2, 3});
  CHECK(values(y) == std::vector<double>{1, 0, 0, 0, 2, 0});
  CHECK_THROWS_AS(OpTest("TfIdfVectorizer", 9).s("mode", "BM25").in(x).run(), mcc::ModelError);
}

// ------------------------------------------------------------------------------------- training

TEST_CASE("Adagrad, Adam and Momentum follow the preview.training update rules") {
  const char* dom = "ai.onnx.preview.training";
  const auto r = tensor_of<float>({}, {0.1}), t = tensor<int64_t>({}, {0});
  const auto x = tensor_of<float>({2}, {1, 2}), g = tensor_of<float>({2}, {-1, 2}), h = tensor_of<float>({2}, {0, 0});
  // Adagrad: h' = h + g^2; x' = x - r g / (sqrt(h') + eps).
  auto ya = OpTest("Adagrad", 1, dom).in(r).in(t).in(x).in(g).in(h).outs(2).f("epsilon", 0).run();
  CHECK(max_diff(ya[0], {1.1, 1.9}) < 1e-6);
  CHECK(max_diff(ya[1], {1, 4}) < 1e-6);
  // Momentum at T=0 uses beta=1: v' = alpha v + g; x' = x - r v'. Nesterov: x - r (g + alpha v').
  const auto v = tensor_of<float>({2}, {1, 1});
  auto ym = OpTest("Momentum", 1, dom).in(r).in(t).in(x).in(g).in(v).outs(2)
                .f("alpha", 0.5).f("beta", 0.1).f("norm_coefficient", 0).s("mode", "standard").run();
  CHECK(max_diff(ym[1], {-0.5, 2.5}) < 1e-6);
  CHECK(max_diff(ym[0], {1.05, 1.75}) < 1e-6);
  ym = OpTest("Momentum", 1, dom).in(r).in(t).in(x).in(g).in(v).outs(2)
           .f("alpha", 0.5).f("beta", 0.1).f("norm_coefficient", 0).s("mode", "nesterov").run();
  CHECK(max_diff(ym[0], {1 - 0.1 * (-1 - 0.25), 2 - 0.1 * (2 + 1.25)}) < 1e-6);
  // Adam at T=0 (no bias correction), alpha 0.5, beta 0.5, eps 0: v' = 0.5 g, h' = 0.5 g^2.
  auto yd = OpTest("Adam", 1, dom).in(r).in(t).in(x).in(g).in(h).in(h).outs(3).f("alpha", 0.5).f("beta", 0.5).f("epsilon", 0).run();
  const double s = 0.5 / std::sqrt(0.5);
  CHECK(max_diff(yd[0], {1 + 0.1 * s, 2 - 0.1 * s}) < 1e-6);
  CHECK(max_diff(yd[1], {-0.5, 1}) < 1e-6);
  CHECK(max_diff(yd[2], {0.5, 2}) < 1e-6);
  CHECK_THROWS_AS(OpTest("Momentum", 1, dom).in(r).in(t).in(x).in(g).in(v).outs(2).s("mode", "standard").run(), mcc::ModelError);
}

// ------------------------------------------------------------------------------------- random

TEST_CASE("random ops are reproducible with a seed and respect their ranges") {
  auto u = [](float seed) {
    return OpTest("RandomUniform", 17).is("shape", {4, 5}).f("low", 2).f("high", 3).f("seed", seed).run1();
  };
  const auto a = values(u(1.5f)), b = values(u(1.5f)), c = values(u(7.f));
  CHECK(a == b);
  CHECK(a != c);
  for (double v : a) CHECK((v >= 2 && v < 3));
  const auto n = OpTest("RandomNormalLike", 17).in(tensor_of<double>({100}, std::vector<double>(100, 0))).f("mean", 10).f("seed", 3).run1();
  CHECK(n.dtype() == ir::DType::F64);
  double mean = 0;
  for (double v : values(n)) mean += v / 100;
  CHECK(std::abs(mean - 10) < 0.5);
  // Bernoulli with p in {0, 1} is deterministic; Multinomial with one dominant class too.
  CHECK(values(OpTest("Bernoulli", 15).in(tensor_of<float>({4}, {0, 1, 1, 0})).run1()) == std::vector<double>{0, 1, 1, 0});
  const auto m = OpTest("Multinomial", 7).in(tensor_of<float>({2, 3}, {0, 0, 100, 100, 0, 0})).i("sample_size", 4).i("dtype", 7).run1();
  CHECK(m.dtype() == ir::DType::I64);
  CHECK(values(m) == std::vector<double>{2, 2, 2, 2, 0, 0, 0, 0});
  CHECK_THROWS_AS(OpTest("Multinomial", 7).in(tensor_of<float>({1, 2}, {0, 0})).i("dtype", 1).run(), mcc::UnsupportedError);
}
