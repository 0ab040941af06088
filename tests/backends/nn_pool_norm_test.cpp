// cpu kernels of the nn family: pooling, normalization and Einsum. Expected values are from the
// ONNX operator spec examples or worked out by hand in the comments.
#include <doctest/doctest.h>

#include <cmath>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::DType;
using ir::Tensor;

TEST_CASE("MaxPool: values, Indices in both storage orders, ceil_mode, int8 with pads") {
  const Tensor x = tensor<float>({1, 1, 4, 4}, iota(16));
  auto y =
      OpTest("MaxPool", 12).in(x).outs(2).is("kernel_shape", {2, 2}).is("strides", {2, 2}).run();
  CHECK(max_diff(y[0], {5, 7, 13, 15}) == 0.0);
  CHECK(y[1].dtype() == DType::I64);
  CHECK(max_diff(y[1], {5, 7, 13, 15}) == 0.0);
  y = OpTest("MaxPool", 12)
          .in(x)
          .outs(2)
          .is("kernel_shape", {2, 2})
          .is("strides", {2, 2})
          .i("storage_order", 1)
          .run();
  CHECK(max_diff(y[1], {5, 13, 7, 15}) == 0.0);  // column-major: w * H + h
  y = OpTest("MaxPool", 12)
          .in(x)
          .is("kernel_shape", {3, 3})
          .is("strides", {2, 2})
          .i("ceil_mode", 1)
          .run();
  CHECK(y[0].dims() == std::vector<int64_t>{1, 1, 2, 2});
  CHECK(max_diff(y[0], {10, 11, 14, 15}) == 0.0);
  // Padding never wins a max, even for negative int8 values.
  y = OpTest("MaxPool", 12)
          .in(tensor<int8_t>({1, 1, 2, 2}, {-1, -2, -3, -4}))
          .is("kernel_shape", {2, 2})
          .is("pads", {1, 1, 1, 1})
          .run();
  CHECK(y[0].dtype() == DType::I8);
  CHECK(max_diff(y[0], {-1, -1, -2, -1, -1, -2, -3, -3, -4}) == 0.0);
  // Dilation 2: the window {0, 2} x {0, 2} of a 3x3 input.
  y = OpTest("MaxPool", 12)
          .in(tensor<float>({1, 1, 3, 3}, {9, 0, 1, 0, 0, 0, 2, 0, 3}))
          .outs(2)
          .is("kernel_shape", {2, 2})
          .is("dilations", {2, 2})
          .run();
  CHECK(max_diff(y[0], {9}) == 0.0);
  CHECK(max_diff(y[1], {0}) == 0.0);
  CHECK_THROWS_AS(OpTest("MaxPool", 12).in(x).run(), mcc::ModelError);  // kernel_shape is required
}

TEST_CASE("AveragePool: count_include_pad, f16, 1-D") {
  const Tensor x = tensor<float>({1, 1, 3, 3}, iota(9));
  auto y =
      OpTest("AveragePool", 11).in(x).is("kernel_shape", {3, 3}).is("pads", {1, 1, 1, 1}).run();
  CHECK(max_diff(y[0], {2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6}) < 1e-6);
  y = OpTest("AveragePool", 11)
          .in(x)
          .is("kernel_shape", {3, 3})
          .is("pads", {1, 1, 1, 1})
          .i("count_include_pad", 1)
          .run();
  CHECK(max_diff(y[0], {8 / 9., 15 / 9., 12 / 9., 21 / 9., 36 / 9., 27 / 9., 20 / 9., 33 / 9.,
                        24 / 9.}) < 1e-6);
  std::vector<mcc::f16> h;
  for (float v : {1.f, 2.f, 3.f, 5.f}) h.push_back(mcc::f16(v));
  y = OpTest("AveragePool", 11).in(tensor<mcc::f16>({1, 1, 4}, h)).is("kernel_shape", {2}).run();
  CHECK(y[0].dtype() == DType::F16);
  CHECK(max_diff(y[0], {1.5, 2.5, 4}) == 0.0);
}

TEST_CASE("Global pools, LpPool, GlobalLpPool") {
  const Tensor x = tensor<float>({1, 2, 2, 2}, {1, 2, 3, 6, -1, -2, -3, -4});
  auto y = OpTest("GlobalAveragePool", 1).in(x).run();
  CHECK(y[0].dims() == std::vector<int64_t>{1, 2, 1, 1});
  CHECK(max_diff(y[0], {3, -2.5}) == 0.0);
  y = OpTest("GlobalMaxPool", 1).in(x).run();
  CHECK(max_diff(y[0], {6, -1}) == 0.0);
  y = OpTest("LpPool", 18)
          .in(tensor<float>({1, 1, 2}, {3, -4}))
          .is("kernel_shape", {2})
          .i("p", 2)
          .run();
  CHECK(max_diff(y[0], {5}) < 1e-6);
  y = OpTest("GlobalLpPool", 2).in(tensor<float>({1, 1, 2}, {3, -4})).i("p", 1).run();
  CHECK(max_diff(y[0], {7}) < 1e-6);
}

TEST_CASE("MaxPool f32 fast paths (windows inside the input, padded stride-1/2 rows) against a naive max") {
  struct Case { int64_t H, W, k, s, d, p; };
  for (const Case& c : {Case{28, 28, 2, 2, 1, 0}, Case{5, 67, 2, 2, 1, 0}, Case{9, 9, 2, 2, 1, 0},
                        Case{14, 14, 3, 3, 1, 0}, Case{11, 35, 3, 2, 1, 0}, Case{13, 20, 2, 1, 2, 0},
                        Case{4, 2, 2, 2, 1, 0}, Case{24, 96, 3, 2, 1, 1}, Case{7, 41, 3, 2, 1, 1},
                        Case{6, 37, 5, 1, 1, 2}, Case{10, 70, 3, 2, 2, 2}}) {
    CAPTURE(c.W);
    CAPTURE(c.k);
    CAPTURE(c.s);
    CAPTURE(c.p);
    const int64_t C = 3, OH = (c.H + 2 * c.p - (c.k - 1) * c.d - 1) / c.s + 1,
                  OW = (c.W + 2 * c.p - (c.k - 1) * c.d - 1) / c.s + 1;
    std::vector<float> v(static_cast<size_t>(C * c.H * c.W));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 2654435761u) % 2001) / 100.f - 10.f;
    auto y = OpTest("MaxPool", 12)
                 .in(tensor<float>({1, C, c.H, c.W}, v))
                 .is("kernel_shape", {c.k, c.k})
                 .is("strides", {c.s, c.s})
                 .is("dilations", {c.d, c.d})
                 .is("pads", {c.p, c.p, c.p, c.p})
                 .run();
    REQUIRE(y[0].dims() == std::vector<int64_t>{1, C, OH, OW});
    int bad = 0;
    for (int64_t p = 0; p < C; ++p)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float want = -1e30f;
          for (int64_t i = 0; i < c.k; ++i)
            for (int64_t j = 0; j < c.k; ++j) {
              const int64_t ih = oh * c.s - c.p + i * c.d, iw = ow * c.s - c.p + j * c.d;
              if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W)
                want = std::max(want, v[static_cast<size_t>((p * c.H + ih) * c.W + iw)]);
            }
          bad += y[0].data<float>()[static_cast<size_t>((p * OH + oh) * OW + ow)] != want;
        }
    CHECK(bad == 0);
  }
}

TEST_CASE("GlobalAveragePool f32 over long planes: lane sums stay within f32 rounding of the exact mean") {
  // 3 planes: 16 x 37 + 5 elements (full lanes and a tail), 7 (tail only), 1000.
  for (int64_t S : {597, 7, 1000}) {
    std::vector<float> v(static_cast<size_t>(3 * S));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 1000) / 997.f - 0.3f;
    auto y = OpTest("GlobalAveragePool", 1).in(tensor<float>({1, 3, S}, v)).run();
    REQUIRE(y[0].dims() == std::vector<int64_t>{1, 3, 1});
    for (int64_t c = 0; c < 3; ++c) {
      double exact = 0;
      for (int64_t i = 0; i < S; ++i) exact += v[static_cast<size_t>(c * S + i)];
      exact /= static_cast<double>(S);
      CHECK(std::abs(y[0].data<float>()[static_cast<size_t>(c)] - exact) < 1e-6);
    }
  }
}

TEST_CASE("MaxUnpool and MaxRoiPool") {
  const Tensor x = tensor<float>({1, 1, 2, 2}, {5, 6, 7, 8});
  const Tensor ind = tensor<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15});
  auto y =
      OpTest("MaxUnpool", 11).in(x).in(ind).is("kernel_shape", {2, 2}).is("strides", {2, 2}).run();
  CHECK(y[0].dims() == std::vector<int64_t>{1, 1, 4, 4});
  CHECK(max_diff(y[0], {0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}) == 0.0);
  // With output_shape 5x5 the indices keep their 4x4 coordinates.
  y = OpTest("MaxUnpool", 11)
          .in(x)
          .in(ind)
          .in(tensor<int64_t>({4}, {1, 1, 5, 5}))
          .is("kernel_shape", {2, 2})
          .is("strides", {2, 2})
          .run();
  CHECK(max_diff(y[0], {0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0,
                        0, 0, 0, 7, 0, 8, 0, 0, 0, 0, 0, 0}) == 0.0);
  CHECK_THROWS_AS(OpTest("MaxUnpool", 11)
                      .in(x)
                      .in(tensor<int64_t>({1, 1, 2, 2}, {5, 7, 13, 99}))
                      .is("kernel_shape", {2, 2})
                      .is("strides", {2, 2})
                      .run(),
                  mcc::ModelError);
  // One ROI covering the whole 4x4 map, pooled to 2x2: max of each quadrant.
  auto r = OpTest("MaxRoiPool", 1)
               .in(tensor<float>({1, 1, 4, 4}, iota(16)))
               .in(tensor<float>({1, 5}, {0, 0, 0, 3, 3}))
               .is("pooled_shape", {2, 2})
               .run();
  CHECK(r[0].dims() == std::vector<int64_t>{1, 1, 2, 2});
  CHECK(max_diff(r[0], {5, 7, 13, 15}) == 0.0);
}

TEST_CASE("BatchNormalization: inference and training_mode") {
  const Tensor x = tensor<float>({1, 2, 1, 3}, {-1, 0, 1, 2, 3, 4});
  const Tensor s = tensor<float>({2}, {1, 1.5f}), b = tensor<float>({2}, {0, 1});
  const Tensor mean = tensor<float>({2}, {0, 3}), var = tensor<float>({2}, {1, 1.5f});
  auto y = OpTest("BatchNormalization", 15).in(x).in(s).in(b).in(mean).in(var).run();
  const double a0 = 1 / std::sqrt(1 + 1e-5), a1 = 1.5 / std::sqrt(1.5 + 1e-5);
  CHECK(max_diff(y[0], {-a0, 0, a0, -a1 + 1, 1, a1 + 1}) < 1e-6);
  // Training: batch stats per channel: mean 0 / 3, var 2/3 each; running = 0.9 * in + 0.1 * batch.
  auto t = OpTest("BatchNormalization", 15)
               .in(x)
               .in(s)
               .in(b)
               .in(mean)
               .in(var)
               .outs(3)
               .i("training_mode", 1)
               .run();
  const double i0 = 1 / std::sqrt(2 / 3. + 1e-5);
  CHECK(max_diff(t[0], {-i0, 0, i0, -1.5 * i0 + 1, 1, 1.5 * i0 + 1}) < 1e-5);
  CHECK(max_diff(t[1], {0, 3}) < 1e-6);
  CHECK(max_diff(t[2], {0.9 + 0.2 / 3, 1.35 + 0.2 / 3}) < 1e-6);
  CHECK_THROWS_AS(OpTest("BatchNormalization", 15)
                      .in(x)
                      .in(tensor<float>({3}, {1, 1, 1}))
                      .in(b)
                      .in(mean)
                      .in(var)
                      .run(),
                  mcc::ModelError);
}

TEST_CASE("InstanceNormalization, GroupNormalization, LayerNormalization") {
  auto y = OpTest("InstanceNormalization", 6)
               .in(tensor<float>({1, 1, 1, 4}, {1, 2, 3, 4}))
               .in(tensor<float>({1}, {2}))
               .in(tensor<float>({1}, {1}))
               .run();
  const double k = 2 / std::sqrt(1.25 + 1e-5);
  CHECK(max_diff(y[0], {1 - 1.5 * k, 1 - 0.5 * k, 1 + 0.5 * k, 1 + 1.5 * k}) < 1e-5);
  auto g = OpTest("GroupNormalization", 21)
               .in(tensor<float>({1, 4, 1, 1}, {1, 2, 3, 5}))
               .in(tensor<float>({4}, {1, 1, 1, 2}))
               .in(tensor<float>({4}, {0, 0, 0, 1}))
               .i("num_groups", 2)
               .f("epsilon", 0.f)
               .run();
  CHECK(max_diff(g[0], {-1, 1, -1, 3}) < 1e-6);
  auto l = OpTest("LayerNormalization", 17)
               .in(tensor<float>({2, 2}, {1, 3, 2, 6}))
               .in(tensor<float>({2}, {2, 3}))
               .in(tensor<float>({2}, {0, 1}))
               .outs(3)
               .f("epsilon", 0.f)
               .run();
  CHECK(max_diff(l[0], {-2, 4, -2, 4}) < 1e-6);
  CHECK(l[1].dims() == std::vector<int64_t>{2, 1});
  CHECK(max_diff(l[1], {2, 4}) < 1e-6);
  CHECK(max_diff(l[2], {1, 0.5}) < 1e-6);
  std::vector<mcc::bf16> hb;
  for (float v : {1.f, 3.f, 2.f, 6.f}) hb.push_back(mcc::bf16(v));
  auto lb = OpTest("LayerNormalization", 17)
                .in(tensor<mcc::bf16>({2, 2}, hb))
                .in(tensor<mcc::bf16>({2}, {mcc::bf16(1.f), mcc::bf16(1.f)}))
                .f("epsilon", 0.f)
                .run();
  CHECK(lb[0].dtype() == DType::BF16);
  CHECK(max_diff(lb[0], {-1, 1, -1, 1}) == 0.0);
  CHECK_THROWS_AS(OpTest("LayerNormalization", 17)
                      .in(tensor<float>({2, 2}, {1, 3, 2, 6}))
                      .in(tensor<float>({3}, {1, 1, 1}))
                      .run(),
                  mcc::ModelError);
}

TEST_CASE("LRN, LpNormalization, MeanVarianceNormalization") {
  // size 3, alpha/size = 1, beta 1, bias 1: y_c = x_c / (1 + sum of squares of the neighbours).
  auto y = OpTest("LRN", 13)
               .in(tensor<float>({1, 3, 1, 1}, {1, 2, 3}))
               .i("size", 3)
               .f("alpha", 3.f)
               .f("beta", 1.f)
               .run();
  CHECK(max_diff(y[0], {1 / 6., 2 / 15., 3 / 14.}) < 1e-6);
  y = OpTest("LpNormalization", 1).in(tensor<float>({2, 2}, {3, 4, 0, 0})).run();
  CHECK(max_diff(y[0], {0.6, 0.8, 0, 0}) < 1e-6);
  y = OpTest("LpNormalization", 1)
          .in(tensor<float>({2, 2}, {1, 2, 3, 6}))
          .i("axis", 0)
          .i("p", 1)
          .run();
  CHECK(max_diff(y[0], {0.25, 0.25, 0.75, 0.75}) < 1e-6);
  CHECK_THROWS_AS(OpTest("LpNormalization", 1).in(tensor<float>({2}, {1, 2})).i("p", 3).run(),
                  mcc::ModelError);
  y = OpTest("MeanVarianceNormalization", 13).in(tensor<float>({1, 2, 1, 2}, {1, 3, 10, 10})).run();
  CHECK(max_diff(y[0], {-1, 1, 0, 0}) < 1e-6);
}

TEST_CASE("Einsum: matmul, transpose, diagonal, sums, ellipsis, integers") {
  const Tensor a = tensor<float>({2, 3}, iota(6));
  const Tensor b = tensor<float>({3, 2}, {1, 0, 0, 1, 1, 1});
  auto y = OpTest("Einsum", 12).in(a).in(b).s("equation", "ij,jk->ik").run();
  CHECK(max_diff(y[0], {2, 3, 8, 9}) == 0.0);
  y = OpTest("Einsum", 12).in(a).s("equation", "ij->ji").run();
  CHECK(y[0].dims() == std::vector<int64_t>{3, 2});
  CHECK(max_diff(y[0], {0, 3, 1, 4, 2, 5}) == 0.0);
  y = OpTest("Einsum", 12).in(a).s("equation", "ij->").run();
  CHECK(max_diff(y[0], {15}) == 0.0);
  y = OpTest("Einsum", 12).in(a).s("equation", "ij->i").run();
  CHECK(max_diff(y[0], {3, 12}) == 0.0);
  y = OpTest("Einsum", 12).in(tensor<float>({3, 3}, iota(9))).s("equation", "ii->i").run();
  CHECK(max_diff(y[0], {0, 4, 8}) == 0.0);
  y = OpTest("Einsum", 12)
          .in(tensor<float>({3}, {1, 2, 3}))
          .in(tensor<float>({3}, {4, 5, 6}))
          .s("equation", "i,i")
          .run();
  CHECK(y[0].rank() == 0);
  CHECK(max_diff(y[0], {32}) == 0.0);
  // Implicit output: letters used once, sorted: "ba,ac" -> "bc" = (A^T)(C)... here b=2,a=3,c=2.
  y = OpTest("Einsum", 12).in(tensor<float>({2, 3}, iota(6))).in(b).s("equation", "ba,ac").run();
  CHECK(max_diff(y[0], {2, 3, 8, 9}) == 0.0);
  // Ellipsis batch with broadcasting: [2, 1, 3] x [3, 2] per batch.
  y = OpTest("Einsum", 12)
          .in(tensor<float>({2, 1, 3}, iota(6)))
          .in(b)
          .s("equation", "...ij,jk->...ik")
          .run();
  CHECK(y[0].dims() == std::vector<int64_t>{2, 1, 2});
  CHECK(max_diff(y[0], {2, 3, 8, 9}) == 0.0);
  // Three operands, outer product then contraction: sum_j a_i b_j c_j.
  y = OpTest("Einsum", 12)
          .in(tensor<float>({2}, {1, 2}))
          .in(tensor<float>({2}, {3, 4}))
          .in(tensor<float>({2}, {5, 6}))
          .s("equation", "i,j,j->i")
          .run();
  CHECK(max_diff(y[0], {39, 78}) == 0.0);
  auto yi = OpTest("Einsum", 12)
                .in(tensor<int32_t>({2, 2}, {1, 2, 3, 4}))
                .in(tensor<int32_t>({2, 2}, {1, 1, 1, 1}))
                .s("equation", "ij,ij->i")
                .run();
  CHECK(yi[0].dtype() == DType::I32);
  CHECK(max_diff(yi[0], {3, 7}) == 0.0);
  CHECK_THROWS_AS(OpTest("Einsum", 12).in(a).s("equation", "ij,jk->ik").run(), mcc::ModelError);
  CHECK_THROWS_AS(OpTest("Einsum", 12).in(a).s("equation", "ijk->i").run(), mcc::ModelError);
}

TEST_CASE("RMSNormalization and Col2Im") {
  auto y = OpTest("RMSNormalization", 23)
               .in(tensor<float>({1, 2}, {3, 4}))
               .in(tensor<float>({2}, {1, 2}))
               .f("epsilon", 0.f)
               .run();
  const double rms = std::sqrt(12.5);
  CHECK(max_diff(y[0], {3 / rms, 8 / rms}) < 1e-6);
  CHECK_THROWS_AS(OpTest("RMSNormalization", 23)
                      .in(tensor<float>({1, 2}, {3, 4}))
                      .in(tensor<float>({3}, {1, 1, 1}))
                      .run(),
                  mcc::ModelError);
  // Four 2x2 blocks of ones folded into a 3x3 image count the overlaps.
  auto c = OpTest("Col2Im", 18)
               .in(tensor<float>({1, 4, 4}, std::vector<float>(16, 1.f)))
               .in(tensor<int64_t>({2}, {3, 3}))
               .in(tensor<int64_t>({2}, {2, 2}))
               .run();
  CHECK(c[0].dims() == std::vector<int64_t>{1, 1, 3, 3});
  CHECK(max_diff(c[0], {1, 2, 1, 2, 4, 2, 1, 2, 1}) == 0.0);
  CHECK_THROWS_AS(OpTest("Col2Im", 18)
                      .in(tensor<float>({1, 4, 5}, std::vector<float>(20, 1.f)))
                      .in(tensor<int64_t>({2}, {3, 3}))
                      .in(tensor<int64_t>({2}, {2, 2}))
                      .run(),
                  mcc::ModelError);
}
