// cpu kernels of the nn family: Conv, ConvTranspose, DeformConv, ConvInteger, QLinearConv, Gemm,
// MatMul, MatMulInteger, QLinearMatMul, Attention, FlexAttention, LinearAttention, RotaryEmbedding,
// CausalConvWithState. Expected values come from the ONNX operator spec examples or are computed
// by hand / by the naive loops here.
#include <doctest/doctest.h>

#include <cmath>

#include "backends/cpu/kernels/conv_util.h"
#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::DType;
using ir::Tensor;

namespace {

// Direct 2-D convolution (N, C, H, W) used as the reference for the optimised paths.
std::vector<double> naive_conv2d(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& b, int64_t N, int64_t C, int64_t H,
                                 int64_t W, int64_t M, int64_t KH, int64_t KW, int64_t G,
                                 int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t ph,
                                 int64_t pw, int64_t OH, int64_t OW) {
  std::vector<double> y(static_cast<size_t>(N * M * OH * OW), 0.0);
  const int64_t cg = C / G, mg = M / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b.empty() ? 0.0 : b[static_cast<size_t>(m)];
          const int64_t g = m / mg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += static_cast<double>(
                           x[static_cast<size_t>(((n * C + g * cg + c) * H + ih) * W + iw)]) *
                       w[static_cast<size_t>(((m * cg + c) * KH + kh) * KW + kw)];
              }
          y[static_cast<size_t>(((n * M + m) * OH + oh) * OW + ow)] = acc;
        }
  return y;
}

const std::vector<double> kConvPadded = {12,  21,  27, 33,  24,  33,  54, 63,  72,
                                         51,  63,  99, 108, 117, 81,  93, 144, 153,
                                         162, 111, 72, 111, 117, 123, 84};

}  // namespace

TEST_CASE("Conv: spec example with and without padding (f32)") {
  const Tensor x = tensor<float>({1, 1, 5, 5}, iota(25));
  const Tensor w = tensor<float>({1, 1, 3, 3}, std::vector<float>(9, 1.f));
  auto y = OpTest("Conv", 11).in(x).in(w).is("kernel_shape", {3, 3}).is("pads", {1, 1, 1, 1}).run();
  REQUIRE(y[0].dims() == std::vector<int64_t>{1, 1, 5, 5});
  CHECK(max_diff(y[0], kConvPadded) == 0.0);
  y = OpTest("Conv", 11).in(x).in(w).run();
  CHECK(y[0].dims() == std::vector<int64_t>{1, 1, 3, 3});
  CHECK(max_diff(y[0], {54, 63, 72, 99, 108, 117, 144, 153, 162}) == 0.0);
  // strides 2 with asymmetric padding (spec: conv_with_strides_and_asymmetric_padding).
  const Tensor x7 = tensor<float>({1, 1, 7, 5}, iota(35));
  y = OpTest("Conv", 11).in(x7).in(w).is("pads", {1, 0, 1, 0}).is("strides", {2, 2}).run();
  CHECK(y[0].dims() == std::vector<int64_t>{1, 1, 4, 2});
  CHECK(max_diff(y[0], {21, 33, 99, 117, 189, 207, 171, 183}) == 0.0);
}

TEST_CASE("Conv: auto_pad SAME_UPPER / SAME_LOWER keep ceil(in / stride)") {
  const Tensor x = tensor<float>({1, 1, 5, 5}, iota(25));
  const Tensor w = tensor<float>({1, 1, 3, 3}, std::vector<float>(9, 1.f));
  auto y = OpTest("Conv", 11).in(x).in(w).s("auto_pad", "SAME_LOWER").is("strides", {2, 2}).run();
  CHECK(y[0].dims() == std::vector<int64_t>{1, 1, 3, 3});
  CHECK(max_diff(y[0], {12, 27, 24, 63, 108, 81, 72, 117, 84}) == 0.0);
  // 4x4 input, stride 2: one pad row/column, at the end (UPPER) or at the start (LOWER).
  const Tensor x4 = tensor<float>({1, 1, 4, 4}, iota(16));
  y = OpTest("Conv", 11).in(x4).in(w).s("auto_pad", "SAME_UPPER").is("strides", {2, 2}).run();
  CHECK(y[0].dims() == std::vector<int64_t>{1, 1, 2, 2});
  CHECK(max_diff(y[0], {45, 39, 66, 50}) == 0.0);
  y = OpTest("Conv", 11).in(x4).in(w).s("auto_pad", "SAME_LOWER").is("strides", {2, 2}).run();
  CHECK(max_diff(y[0], {10, 24, 51, 90}) == 0.0);
}

TEST_CASE("Conv: f16 and bf16 compute in f32 and store back") {
  std::vector<mcc::f16> xh;
  for (float v : iota(25)) xh.push_back(mcc::f16(v));
  const Tensor w = tensor<mcc::f16>({1, 1, 3, 3}, std::vector<mcc::f16>(9, mcc::f16(1.f)));
  auto y = OpTest("Conv", 11)
               .in(tensor<mcc::f16>({1, 1, 5, 5}, xh))
               .in(w)
               .is("pads", {1, 1, 1, 1})
               .run();
  CHECK(y[0].dtype() == DType::F16);
  CHECK(max_diff(y[0], kConvPadded) == 0.0);
  std::vector<mcc::bf16> xb;
  for (float v : iota(25)) xb.push_back(mcc::bf16(v));
  const Tensor wb = tensor<mcc::bf16>({1, 1, 3, 3}, std::vector<mcc::bf16>(9, mcc::bf16(1.f)));
  y = OpTest("Conv", 11)
          .in(tensor<mcc::bf16>({1, 1, 5, 5}, xb))
          .in(wb)
          .is("pads", {1, 1, 1, 1})
          .run();
  CHECK(y[0].dtype() == DType::BF16);
  CHECK(max_diff(y[0], kConvPadded) == 0.0);  // integers below 256 are exact in bf16
}

TEST_CASE("Conv: im2col, 1x1 and depthwise paths match a direct loop") {
  struct Case {
    int64_t N, C, H, W, M, K, G, s, d, p;
  };
  const Case cases[] = {
      {2, 4, 9, 7, 6, 3, 1, 1, 1, 1},    // im2col
      {1, 6, 8, 8, 4, 3, 2, 2, 1, 1},    // groups, strided
      {1, 3, 10, 9, 5, 3, 1, 1, 2, 2},   // dilated
      {2, 8, 6, 5, 12, 1, 1, 1, 1, 0},   // pointwise
      {1, 6, 11, 9, 6, 3, 6, 1, 1, 1},   // depthwise
      {1, 4, 12, 10, 8, 5, 4, 2, 1, 2},  // depthwise with multiplier 2, strided
      {1, 3, 7, 7, 3, 3, 3, 1, 2, 0},    // depthwise dilated
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    const int64_t cg = c.C / c.G;
    const auto x = random_values(c.N * c.C * c.H * c.W, seed++);
    const auto w = random_values(c.M * cg * c.K * c.K, seed++);
    const auto b = random_values(c.M, seed++);
    const int64_t eff = (c.K - 1) * c.d + 1;
    const int64_t OH = (c.H + 2 * c.p - eff) / c.s + 1, OW = (c.W + 2 * c.p - eff) / c.s + 1;
    auto y = OpTest("Conv", 11)
                 .in(tensor<float>({c.N, c.C, c.H, c.W}, x))
                 .in(tensor<float>({c.M, cg, c.K, c.K}, w))
                 .in(tensor<float>({c.M}, b))
                 .i("group", c.G)
                 .is("strides", {c.s, c.s})
                 .is("dilations", {c.d, c.d})
                 .is("pads", {c.p, c.p, c.p, c.p})
                 .run();
    CHECK(y[0].dims() == std::vector<int64_t>{c.N, c.M, OH, OW});
    CHECK(max_diff(y[0], naive_conv2d(x, w, b, c.N, c.C, c.H, c.W, c.M, c.K, c.K, c.G, c.s, c.s,
                                      c.d, c.d, c.p, c.p, OH, OW)) < 1e-4);
  }
}

TEST_CASE("Conv: 1-D and 3-D convolutions") {
  // 1-D: [0..6] * [1, 2, 1] with pad 1.
  auto y = OpTest("Conv", 11)
               .in(tensor<float>({1, 1, 7}, iota(7)))
               .in(tensor<float>({1, 1, 3}, {1, 2, 1}))
               .is("pads", {1, 1})
               .run();
  CHECK(max_diff(y[0], {1, 4, 8, 12, 16, 20, 17}) == 0.0);
  // 3-D: a 2x2x2 kernel of ones over a 2x3x3 cube sums each 2x2x2 block.
  y = OpTest("Conv", 11)
          .in(tensor<float>({1, 1, 2, 3, 3}, iota(18)))
          .in(tensor<float>({1, 1, 2, 2, 2}, std::vector<float>(8, 1.f)))
          .run();
  CHECK(y[0].dims() == std::vector<int64_t>{1, 1, 1, 2, 2});
  CHECK(max_diff(y[0], {52, 60, 76, 84}) == 0.0);
}

TEST_CASE("Conv: mismatched channels and bad auto_pad are model errors") {
  const Tensor x = tensor<float>({1, 3, 5, 5}, iota(75));
  const Tensor w = tensor<float>({2, 2, 3, 3}, iota(36));
  CHECK_THROWS_AS(OpTest("Conv", 11).in(x).in(w).run(), mcc::ModelError);
  CHECK_THROWS_AS(OpTest("Conv", 11)
                      .in(x)
                      .in(tensor<float>({2, 3, 3, 3}, iota(54)))
                      .s("auto_pad", "BOGUS")
                      .run(),
                  mcc::ModelError);
  CHECK_THROWS_AS(OpTest("Conv", 11)
                      .in(tensor<int32_t>({1, 1, 2, 2}, {1, 2, 3, 4}))
                      .in(tensor<int32_t>({1, 1, 1, 1}, {1}))
                      .run(),
                  mcc::UnsupportedError);
}

TEST_CASE("ConvTranspose: spec example, strides with output_padding and output_shape") {
  const Tensor x = tensor<float>({1, 1, 3, 3}, iota(9));
  const Tensor w = tensor<float>({1, 2, 3, 3}, std::vector<float>(18, 1.f));
  auto y = OpTest("ConvTranspose", 11).in(x).in(w).run();
  REQUIRE(y[0].dims() == std::vector<int64_t>{1, 2, 5, 5});
  const std::vector<double> plane = {0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                     27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  std::vector<double> both = plane;
  both.insert(both.end(), plane.begin(), plane.end());
  CHECK(max_diff(y[0], both) == 0.0);
  // strides [3, 2] with output_shape [10, 8] and with output_padding [1, 1] give the same result.
  auto y1 = OpTest("ConvTranspose", 11)
                .in(x)
                .in(w)
                .is("strides", {3, 2})
                .is("output_shape", {10, 8})
                .run();
  auto y2 = OpTest("ConvTranspose", 11)
                .in(x)
                .in(w)
                .is("strides", {3, 2})
                .is("output_padding", {1, 1})
                .run();
  CHECK(y1[0].dims() == std::vector<int64_t>{1, 2, 10, 8});
  CHECK(y2[0].dims() == std::vector<int64_t>{1, 2, 10, 8});
  CHECK(max_diff(y1[0], values(y2[0])) == 0.0);
  const std::vector<double> row0 = {0, 0, 1, 1,
                                    3, 2, 2, 0};  // first output row of the spec example
  const auto v1 = values(y1[0]);
  CHECK(std::vector<double>(v1.begin(), v1.begin() + 8) == row0);
  CHECK_THROWS_AS(OpTest("ConvTranspose", 11).in(x).in(tensor<float>({2, 1, 3, 3}, iota(18))).run(),
                  mcc::ModelError);
}

TEST_CASE("ConvTranspose: groups and bias") {
  // Two groups of one channel each, 1x1 kernels: y[m] = x[g] * w[g] + b[m].
  const Tensor x = tensor<float>({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor w = tensor<float>({2, 1, 1, 1}, {2, 3});
  auto y =
      OpTest("ConvTranspose", 11).in(x).in(w).in(tensor<float>({2}, {1, -1})).i("group", 2).run();
  CHECK(max_diff(y[0], {3, 5, 7, 9, 14, 17, 20, 23}) == 0.0);
}

TEST_CASE("ConvInteger and QLinearConv: zero points, padding, per-channel scales") {
  const Tensor x = tensor<uint8_t>({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Tensor w = tensor<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1});
  auto y = OpTest("ConvInteger", 10).in(x).in(w).in(Tensor::scalar<uint8_t>(1)).run();
  CHECK(y[0].dtype() == DType::I32);
  CHECK(max_diff(y[0], {12, 16, 24, 28}) == 0.0);
  y = OpTest("ConvInteger", 10)
          .in(x)
          .in(w)
          .in(Tensor::scalar<uint8_t>(1))
          .is("pads", {1, 1, 1, 1})
          .run();
  CHECK(max_diff(y[0], {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}) == 0.0);
  // QLinearConv: int8 weights with two output channels and per-channel scales; y = rint(acc * s) +
  // zp.
  const Tensor wq = tensor<int8_t>({2, 1, 2, 2}, {1, 1, 1, 1, -1, 0, 0, 1});
  auto q = OpTest("QLinearConv", 10)
               .in(x)
               .in(Tensor::scalar<float>(0.5f))
               .in(Tensor::scalar<uint8_t>(1))
               .in(wq)
               .in(tensor<float>({2}, {1.f, 2.f}))
               .in(tensor<int8_t>({2}, {0, 0}))
               .in(Tensor::scalar<float>(1.f))
               .in(Tensor::scalar<uint8_t>(10))
               .in(tensor<int32_t>({2}, {1, 0}))
               .run();
  CHECK(q[0].dtype() == DType::U8);
  // channel 0: (acc + 1) * 0.5 + 10 with acc = 12, 16, 24, 28
  // -> 16.5->16, 18.5->18, 22.5->22, 24.5->24 (half to even) channel 1: acc = x[i+1][j+1] - x[i][j]
  // = 4 each -> 4 * 1.0 + 10 = 14
  CHECK(max_diff(q[0], {16, 18, 22, 24, 14, 14, 14, 14}) == 0.0);
  CHECK_THROWS_AS(OpTest("ConvInteger", 10).in(x).in(w).in(Tensor::scalar<int8_t>(1)).run(),
                  mcc::ModelError);
}

TEST_CASE("Gemm: transA, transB, alpha, beta and broadcast C") {
  const Tensor a = tensor<float>({3, 2}, {1, 4, 2, 5, 3, 6});  // A^T = [[1,2,3],[4,5,6]]
  const Tensor b = tensor<float>({2, 3}, {1, 0, 1, 0, 1, 1});  // B^T = [[1,0],[0,1],[1,1]]
  auto y = OpTest("Gemm", 13)
               .in(a)
               .in(b)
               .in(tensor<float>({2}, {10, 20}))
               .i("transA", 1)
               .i("transB", 1)
               .f("alpha", 2.f)
               .f("beta", 0.5f)
               .run();
  // A^T B^T = [[4, 5], [10, 11]]; *2 + 0.5*[10, 20]
  CHECK(y[0].dims() == std::vector<int64_t>{2, 2});
  CHECK(max_diff(y[0], {13, 20, 25, 32}) < 1e-6);
  y = OpTest("Gemm", 13).in(tensor<float>({1, 2}, {1, 2})).in(tensor<float>({2, 1}, {3, 4})).run();
  CHECK(max_diff(y[0], {11}) == 0.0);
  auto yi = OpTest("Gemm", 13)
                .in(tensor<int64_t>({1, 2}, {1, 2}))
                .in(tensor<int64_t>({2, 2}, {1, 2, 3, 4}))
                .in(Tensor::scalar<int64_t>(100))
                .run();
  CHECK(yi[0].dtype() == DType::I64);
  CHECK(max_diff(yi[0], {107, 110}) == 0.0);
  CHECK_THROWS_AS(OpTest("Gemm", 13).in(a).in(a).run(), mcc::ModelError);
  CHECK_THROWS_AS(OpTest("Gemm", 13)
                      .in(a)
                      .in(b)
                      .in(tensor<float>({3}, {1, 2, 3}))
                      .i("transA", 1)
                      .i("transB", 1)
                      .run(),
                  mcc::ModelError);
}

TEST_CASE("MatMul: batch broadcasting, 1-D operands and dtypes") {
  // [2, 2, 3] x [3, 2]: one GEMM with the batch folded into rows.
  const Tensor a = tensor<float>({2, 2, 3}, iota(12));
  const Tensor b = tensor<float>({3, 2}, {1, 0, 0, 1, 1, 1});
  auto y = OpTest("MatMul", 13).in(a).in(b).run();
  CHECK(y[0].dims() == std::vector<int64_t>{2, 2, 2});
  CHECK(max_diff(y[0], {2, 3, 8, 9, 14, 15, 20, 21}) == 0.0);
  // [2, 1, 1, 3] x [1, 2, 3, 1]: both sides broadcast their batch dims to [2, 2].
  auto yb = OpTest("MatMul", 13)
                .in(tensor<float>({2, 1, 1, 3}, iota(6)))
                .in(tensor<float>({1, 2, 3, 1}, {1, 1, 1, 1, 0, 0}))
                .run();
  CHECK(yb[0].dims() == std::vector<int64_t>{2, 2, 1, 1});
  CHECK(max_diff(yb[0], {3, 0, 12, 3}) == 0.0);
  // 1-D x 1-D -> scalar; 1-D x 2-D -> 1-D.
  auto yd = OpTest("MatMul", 13)
                .in(tensor<float>({3}, {1, 2, 3}))
                .in(tensor<float>({3}, {4, 5, 6}))
                .run();
  CHECK(yd[0].rank() == 0);
  CHECK(max_diff(yd[0], {32}) == 0.0);
  auto yv = OpTest("MatMul", 13).in(tensor<float>({3}, {1, 2, 3})).in(b).run();
  CHECK(yv[0].dims() == std::vector<int64_t>{2});
  CHECK(max_diff(yv[0], {4, 5}) == 0.0);
  auto yi = OpTest("MatMul", 13)
                .in(tensor<int32_t>({1, 2}, {2, 3}))
                .in(tensor<int32_t>({2, 1}, {4, 5}))
                .run();
  CHECK(yi[0].dtype() == DType::I32);
  CHECK(max_diff(yi[0], {23}) == 0.0);
  auto yh = OpTest("MatMul", 13)
                .in(tensor<mcc::f16>({1, 2}, {mcc::f16(0.5f), mcc::f16(2.f)}))
                .in(tensor<mcc::f16>({2, 1}, {mcc::f16(4.f), mcc::f16(1.5f)}))
                .run();
  CHECK(yh[0].dtype() == DType::F16);
  CHECK(max_diff(yh[0], {5}) == 0.0);
  CHECK_THROWS_AS(OpTest("MatMul", 13).in(a).in(tensor<float>({2, 2}, iota(4))).run(),
                  mcc::ModelError);
  CHECK_THROWS_AS(
      OpTest("MatMul", 13).in(tensor<int8_t>({1, 1}, {1})).in(tensor<int8_t>({1, 1}, {1})).run(),
      mcc::UnsupportedError);
}

TEST_CASE("MatMulInteger and QLinearMatMul: spec examples") {
  const Tensor a = tensor<uint8_t>({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  const Tensor b = tensor<uint8_t>({3, 2}, {1, 4, 2, 5, 3, 6});
  auto y = OpTest("MatMulInteger", 10)
               .in(a)
               .in(b)
               .in(Tensor::scalar<uint8_t>(12))
               .in(Tensor::scalar<uint8_t>(0))
               .run();
  CHECK(y[0].dtype() == DType::I32);
  CHECK(max_diff(y[0], {-38, -83, -44, -98, -50, -113, -56, -128}) == 0.0);
  auto q = OpTest("QLinearMatMul", 10)
               .in(tensor<uint8_t>({2, 4}, {208, 236, 0, 238, 3, 214, 255, 29}))
               .in(Tensor::scalar<float>(0.0066f))
               .in(Tensor::scalar<uint8_t>(113))
               .in(tensor<uint8_t>({4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}))
               .in(Tensor::scalar<float>(0.00705f))
               .in(Tensor::scalar<uint8_t>(114))
               .in(Tensor::scalar<float>(0.0107f))
               .in(Tensor::scalar<uint8_t>(118))
               .run();
  CHECK(q[0].dtype() == DType::U8);
  CHECK(max_diff(q[0], {168, 115, 255, 1, 66, 151}) == 0.0);
}

TEST_CASE(
    "DeformConv: zero offsets equal Conv; fractional offsets sample bilinearly; mask scales") {
  const Tensor x = tensor<float>({1, 1, 5, 5}, iota(25));
  const Tensor w = tensor<float>({1, 1, 3, 3}, std::vector<float>(9, 1.f));
  const Tensor zero = tensor<float>({1, 18, 3, 3}, std::vector<float>(162, 0.f));
  auto y = OpTest("DeformConv", 19).in(x).in(w).in(zero).run();
  CHECK(max_diff(y[0], {54, 63, 72, 99, 108, 117, 144, 153, 162}) < 1e-4);
  // 1x1 kernel, offset (0.5, 0.25) everywhere on a 2x2 input, mask 2: the sample at (i + .5, j +
  // .25) mixes four neighbours (zero outside), then doubles.
  const Tensor x2 = tensor<float>({1, 1, 2, 2}, {0, 4, 8, 12});
  const Tensor off =
      tensor<float>({1, 2, 2, 2}, {0.5f, 0.5f, 0.5f, 0.5f, 0.25f, 0.25f, 0.25f, 0.25f});
  y = OpTest("DeformConv", 19)
          .in(x2)
          .in(tensor<float>({1, 1, 1, 1}, {1}))
          .in(off)
          .none()
          .in(tensor<float>({1, 1, 2, 2}, {2, 2, 2, 2}))
          .run();
  // (0.5, 0.25): .5*(.75*0 + .25*4) + .5*(.75*8 + .25*12) = 5; (0.5, 1.25): .5*(.75*4) +
  // .5*(.75*12) = 6 (1.5, 0.25): .5*(.75*8 + .25*12) = 4.5; (1.5, 1.25): .5*(.75*12) = 4.5
  CHECK(max_diff(y[0], {10, 12, 9, 9}) < 1e-5);
  CHECK_THROWS_AS(OpTest("DeformConv", 19)
                      .in(x)
                      .in(w)
                      .in(tensor<float>({1, 18, 2, 2}, std::vector<float>(72, 0.f)))
                      .run(),
                  mcc::ModelError);
}

TEST_CASE("Attention: softmax weights, causal and boolean masks, present key/value, 3-D heads") {
  const Tensor q = tensor<float>({1, 1, 1, 2}, {1, 0});
  const Tensor k = tensor<float>({1, 1, 2, 2}, {1, 0, 0, 1});
  const Tensor v = tensor<float>({1, 1, 2, 1}, {1, 3});
  const double e = std::exp(1.0);
  Tensor mask = Tensor::allocate(DType::Bool, {1, 2});
  mask.mutable_data<bool>()[1] = true;  // attend to the second key only
  auto y = OpTest("Attention", 23)
               .in(q)
               .in(k)
               .in(v)
               .outs(4)
               .f("scale", 1.f)
               .i("qk_matmul_output_mode", 3)
               .run();
  CHECK(max_diff(y[0], {(e + 3) / (e + 1)}) < 1e-6);
  CHECK(max_diff(y[1], {1, 0, 0, 1}) == 0.0);  // present_key = K without a past
  CHECK(max_diff(y[3], {e / (e + 1), 1 / (e + 1)}) < 1e-6);
  y = OpTest("Attention", 23).in(q).in(k).in(v).i("is_causal", 1).run();
  CHECK(max_diff(y[0], {1}) < 1e-6);  // the only query sees only the first key
  y = OpTest("Attention", 23).in(q).in(k).in(v).in(mask).run();
  CHECK(max_diff(y[0], {3}) < 1e-6);
  // 3-D layout with 2 query heads sharing 1 kv head: both heads give the same row.
  auto y3 = OpTest("Attention", 23)
                .in(tensor<float>({1, 1, 4}, {1, 0, 1, 0}))
                .in(tensor<float>({1, 2, 2}, {1, 0, 0, 1}))
                .in(tensor<float>({1, 2, 1}, {1, 3}))
                .i("q_num_heads", 2)
                .i("kv_num_heads", 1)
                .f("scale", 1.f)
                .run();
  CHECK(y3[0].dims() == std::vector<int64_t>{1, 1, 2});
  CHECK(max_diff(y3[0], {(e + 3) / (e + 1), (e + 3) / (e + 1)}) < 1e-6);
  CHECK_THROWS_AS(
      OpTest("Attention", 23).in(q).in(tensor<float>({1, 1, 2, 3}, iota(6))).in(v).run(),
      mcc::ModelError);
}

TEST_CASE("CausalConvWithState and RotaryEmbedding") {
  const Tensor x = tensor<float>({1, 1, 3}, {1, 2, 3});
  const Tensor w = tensor<float>({1, 1, 2}, {1, 1});
  auto y = OpTest("CausalConvWithState", 27).in(x).in(w).outs(2).run();
  CHECK(max_diff(y[0], {1, 3, 5}) == 0.0);  // [0 | 1 2 3] summed pairwise
  CHECK(max_diff(y[1], {3}) == 0.0);        // the last k - 1 inputs carry over
  y = OpTest("CausalConvWithState", 27)
          .in(x)
          .in(w)
          .none()
          .in(tensor<float>({1, 1, 1}, {10}))
          .s("activation", "silu")
          .run();
  CHECK(max_diff(y[0], {11 / (1 + std::exp(-11.0)), 3 / (1 + std::exp(-3.0)),
                        5 / (1 + std::exp(-5.0))}) < 1e-5);
  CHECK_THROWS_AS(OpTest("CausalConvWithState", 27).in(x).in(w).s("activation", "gelu").run(),
                  mcc::ModelError);
  // A quarter turn: cos 0, sin 1 maps (x1, x2) = (1, 0) to (0, 1); the unrotated tail is copied.
  auto r = OpTest("RotaryEmbedding", 23)
               .in(tensor<float>({1, 1, 1, 4}, {1, 0, 7, 8}))
               .in(tensor<float>({1, 1, 1}, {0}))
               .in(tensor<float>({1, 1, 1}, {1}))
               .i("rotary_embedding_dim", 2)
               .run();
  CHECK(max_diff(r[0], {0, 1, 7, 8}) < 1e-7);
  CHECK_THROWS_AS(OpTest("RotaryEmbedding", 23)
                      .in(tensor<float>({1, 1, 1, 4}, {1, 0, 7, 8}))
                      .in(tensor<float>({1, 1, 1}, {0}))
                      .in(tensor<float>({1, 1, 1}, {1}))
                      .in(tensor<int64_t>({1, 1}, {5}))
                      .i("rotary_embedding_dim", 2)
                      .run(),
                  mcc::ModelError);
}

TEST_CASE("LinearAttention: linear, gated and delta state updates") {
  const Tensor q = tensor<float>({1, 2, 1}, {1, 1});
  const Tensor k = tensor<float>({1, 2, 1}, {1, 2});
  const Tensor v = tensor<float>({1, 2, 1}, {3, 4});
  // linear: S = 1 * 3 = 3, then S = 3 + 2 * 4 = 11; o_t = S_t (q = 1, scale 1).
  auto y = OpTest("LinearAttention", 27)
               .in(q)
               .in(k)
               .in(v)
               .outs(2)
               .i("q_num_heads", 1)
               .i("kv_num_heads", 1)
               .f("scale", 1.f)
               .s("update_rule", "linear")
               .run();
  CHECK(max_diff(y[0], {3, 11}) < 1e-6);
  CHECK(max_diff(y[1], {11}) < 1e-6);
  // gated with decay log(0.5): S = 3, then 0.5 * 3 + 8 = 9.5.
  const float lg = std::log(0.5f);
  y = OpTest("LinearAttention", 27)
          .in(q)
          .in(k)
          .in(v)
          .none()
          .in(tensor<float>({1, 2, 1}, {lg, lg}))
          .i("q_num_heads", 1)
          .i("kv_num_heads", 1)
          .f("scale", 1.f)
          .s("update_rule", "gated")
          .run();
  CHECK(max_diff(y[0], {3, 9.5}) < 1e-5);
  // delta with beta 1: S = 3, then v' = 4 - 3 * 2 = -2 and S = 3 + 2 * -2 = -1.
  y = OpTest("LinearAttention", 27)
          .in(q)
          .in(k)
          .in(v)
          .none()
          .none()
          .in(tensor<float>({1, 2, 1}, {1, 1}))
          .i("q_num_heads", 1)
          .i("kv_num_heads", 1)
          .f("scale", 1.f)
          .s("update_rule", "delta")
          .run();
  CHECK(max_diff(y[0], {3, -1}) < 1e-6);
  CHECK_THROWS_AS(OpTest("LinearAttention", 27)
                      .in(q)
                      .in(k)
                      .in(v)
                      .i("q_num_heads", 1)
                      .i("kv_num_heads", 1)
                      .run(),
                  mcc::ModelError);  // gated_delta needs decay and beta
}

TEST_CASE("FlexAttention without modifiers is scaled dot-product attention") {
  OpTest r("FlexAttention", 1, "ai.onnx.preview");
  auto y = r.in(tensor<float>({1, 1, 1, 2}, {1, 0}))
               .in(tensor<float>({1, 1, 2, 2}, {1, 0, 0, 1}))
               .in(tensor<float>({1, 1, 2, 1}, {1, 3}))
               .f("scale", 1.f)
               .run();
  const double e = std::exp(1.0);
  CHECK(max_diff(y[0], {(e + 3) / (e + 1)}) < 1e-6);
}
