// Conv fast paths on the cpu backend: the depthwise 3x3/5x5 stride-1/2 path (f32, f64, channel
// multiplier > 1, wide and narrow maps, asymmetric pads, batch > 1) against a direct loop, the
// same results for 1 and 2 threads, and the GEMM paths with the bias finished in registers,
// split by positions or by output channels across threads.
#include <doctest/doctest.h>

#include <cmath>
#include <utility>

#include "backends/cpu/kernels/cpu_isa.h"
#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::Tensor;

namespace {

struct DwCase {
  int64_t N, C, mult, H, W, K, s, pt, pl, pb, pr;
};

// Direct loop in double: y[n, c*mult + j] = bias + sum over the window.
std::vector<double> direct_dw(const DwCase& c, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& b, int64_t OH, int64_t OW) {
  const int64_t M = c.C * c.mult;
  std::vector<double> y(static_cast<size_t>(c.N * M * OH * OW));
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t oc = 0; oc < M; ++oc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b[static_cast<size_t>(oc)];
          const int64_t ic = oc / c.mult;
          for (int64_t kh = 0; kh < c.K; ++kh)
            for (int64_t kw = 0; kw < c.K; ++kw) {
              const int64_t ih = oh * c.s - c.pt + kh, iw = ow * c.s - c.pl + kw;
              if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
              acc += static_cast<double>(x[static_cast<size_t>(((n * c.C + ic) * c.H + ih) * c.W + iw)]) *
                     w[static_cast<size_t>((oc * c.K + kh) * c.K + kw)];
            }
          y[static_cast<size_t>(((n * M + oc) * OH + oh) * OW + ow)] = acc;
        }
  return y;
}

// An opset-13 model whose graph has one float32 input, "x".
std::unique_ptr<ir::Model> model_with_input_x() {
  auto m = std::make_unique<ir::Model>();
  m->ir_version = 8;
  m->opset_imports = {{"", 13}};
  m->graph = std::make_unique<ir::Graph>();
  ir::Value& xv = m->graph->add_value("x");
  xv.dtype = ir::DType::F32;
  xv.is_graph_input = true;
  m->graph->inputs.push_back(&xv);
  return m;
}

// x [N, C, H, W] graph input -> Conv(1x1 weight w [M, C, 1, 1], bias b when given) -> [Relu];
// the weight is an initializer, also a graph input when `w_overridable`.
std::unique_ptr<ir::Model> pointwise_model(int64_t M, int64_t C, const std::vector<float>& w,
                                           const std::vector<float>* b, bool relu, bool w_overridable) {
  auto m = model_with_input_x();
  ir::Graph& g = *m->graph;
  ir::Value& xv = *g.inputs[0];
  ir::Value& wv = g.add_initializer("w", tensor<float>({M, C, 1, 1}, w));
  if (w_overridable) {
    wv.is_graph_input = true;
    g.inputs.push_back(&wv);
  }
  std::vector<ir::Value*> ins = {&xv, &wv};
  if (b) ins.push_back(&g.add_initializer("b", tensor<float>({M}, *b)));
  ir::Node& conv = g.add_node("Conv", "", "conv", ins, {relu ? "c" : "y"});
  conv.since_version = 11;
  ir::Value* y = conv.outputs[0];
  if (relu) {
    ir::Node& r = g.add_node("Relu", "", "relu", {y}, {"y"});
    r.since_version = 13;
    y = r.outputs[0];
  }
  g.outputs.push_back(y);
  return m;
}

// x [N, C, L] graph input -> Conv(w [M, C, KW] initializer, bias b, stride S, no padding) -> Relu.
std::unique_ptr<ir::Model> strided_1d_model(int64_t M, int64_t C, int64_t KW, int64_t S,
                                            const std::vector<float>& w, const std::vector<float>& b) {
  auto m = model_with_input_x();
  ir::Graph& g = *m->graph;
  ir::Value& xv = *g.inputs[0];
  ir::Value& wv = g.add_initializer("w", tensor<float>({M, C, KW}, w));
  ir::Value& bv = g.add_initializer("b", tensor<float>({M}, b));
  ir::Node& conv = g.add_node("Conv", "", "conv", {&xv, &wv, &bv}, {"c"});
  conv.since_version = 11;
  conv.set_attr(attr_is("strides", {S}));
  ir::Node& r = g.add_node("Relu", "", "relu", {conv.outputs[0]}, {"y"});
  r.since_version = 13;
  g.outputs.push_back(r.outputs[0]);
  return m;
}

// Checks a conv + bias + Relu of output [N, M, P] run three ways (fused on 1 and 2 threads, not
// fused) against the in-order f32 sum over k of w * x, term(n, o, p, k) = {w, x}, + bias, then
// Relu (bit for bit, the same on all three runs, where the AVX-512 kernels run) and a double
// reference (within tol).
template <class Term>
void check_in_order_relu(const Tensor& fused, const Tensor& fused2, const Tensor& plain, int64_t N, int64_t M,
                         int64_t P, int64_t K, const std::vector<float>& b, double tol, Term term) {
  auto f1 = fused.data<float>(), f2 = fused2.data<float>(), pl = plain.data<float>();
  size_t exact = 0, same = 0;
  double md = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < M; ++o)
      for (int64_t p = 0; p < P; ++p) {
        float acc = 0.f;
        double ref = b[static_cast<size_t>(o)];
        for (int64_t k = 0; k < K; ++k) {
          const auto [wk, xk] = term(n, o, p, k);
          acc = std::fma(wk, xk, acc);
          ref += static_cast<double>(wk) * xk;
        }
        const float v = std::max(acc + b[static_cast<size_t>(o)], 0.f);
        const size_t i = static_cast<size_t>((n * M + o) * P + p);
        md = std::max(md, std::abs(std::max(ref, 0.0) - f1[i]));
        exact += v == f1[i];
        same += f1[i] == f2[i] && f1[i] == pl[i];
      }
  const size_t total = static_cast<size_t>(N * M * P);
  CHECK(md < tol);
  if (backends::cpu::cpu_avx512()) {
    CHECK(same == total);
    CHECK(exact == total);
  } else {
    MESSAGE("no AVX-512 kernels here (CPU or MCC_CPU_ISA): only the double reference is checked, "
            "not the in-order sum nor equality across thread counts and fusion");
  }
}

}  // namespace

TEST_CASE("Conv: depthwise 3x3/5x5 stride 1/2 fast path matches a direct loop (f32, f64, 1 and 2 threads)") {
  const DwCase cases[] = {{1, 4, 1, 13, 40, 3, 1, 1, 1, 1, 1}, {2, 3, 1, 16, 33, 3, 2, 1, 1, 1, 1},
                          {1, 2, 2, 9, 17, 3, 2, 0, 0, 1, 1},  {1, 3, 1, 20, 21, 5, 1, 2, 2, 2, 2},
                          {1, 2, 1, 11, 35, 5, 2, 2, 1, 1, 2}, {1, 2, 1, 3, 3, 3, 1, 0, 0, 0, 0},
                          {1, 2, 1, 2, 2, 3, 2, 1, 1, 1, 1},   {1, 5, 1, 7, 7, 3, 1, 0, 1, 2, 0},
                          {1, 2, 1, 10, 70, 5, 1, 2, 2, 2, 2}, {1, 2, 1, 15, 64, 3, 2, 1, 1, 1, 1},
                          {1, 3, 1, 6, 112, 3, 1, 1, 1, 1, 1}, {1, 2, 2, 14, 45, 5, 2, 2, 2, 2, 2},
                          // 16-channel groups with a channel tail, narrow and wide maps
                          {1, 20, 1, 7, 7, 3, 2, 1, 1, 1, 1},  {2, 37, 1, 14, 14, 5, 1, 2, 2, 2, 2},
                          {1, 17, 1, 9, 30, 3, 2, 0, 1, 1, 0}, {1, 33, 1, 23, 19, 5, 2, 1, 2, 2, 1},
                          {1, 16, 1, 7, 7, 3, 1, 1, 1, 1, 1}};
  unsigned seed = 900;
  for (const DwCase& c : cases) {
    CAPTURE(c.K);
    CAPTURE(c.s);
    CAPTURE(c.W);
    const int64_t M = c.C * c.mult;
    const auto x = random_values(c.N * c.C * c.H * c.W, seed++);
    const auto w = random_values(M * c.K * c.K, seed++);
    const auto b = random_values(M, seed++);
    const int64_t OH = (c.H + c.pt + c.pb - c.K) / c.s + 1, OW = (c.W + c.pl + c.pr - c.K) / c.s + 1;
    const auto ref = direct_dw(c, x, w, b, OH, OW);
    auto run = [&](int threads) {
      return OpTest("Conv", 11)
          .in(tensor<float>({c.N, c.C, c.H, c.W}, x))
          .in(tensor<float>({M, 1, c.K, c.K}, w))
          .in(tensor<float>({M}, b))
          .i("group", c.C)
          .is("strides", {c.s, c.s})
          .is("pads", {c.pt, c.pl, c.pb, c.pr})
          .threads(threads)
          .run1();
    };
    const Tensor y1 = run(1), y2 = run(2);
    REQUIRE(y1.dims() == std::vector<int64_t>{c.N, M, OH, OW});
    auto d1 = y1.data<float>();
    auto d2 = y2.data<float>();
    double md = 0;
    bool same = true;
    for (size_t i = 0; i < ref.size(); ++i) {
      md = std::max(md, std::abs(ref[i] - d1[i]));
      same = same && d1[i] == d2[i];
    }
    CHECK(md < 1e-5);
    CHECK(same);
#if defined(__AVX512F__)
    // The AVX-512 f32 kernel's contract: bias, then one fused multiply-add per tap in (kh, kw)
    // order, padding taps reading zero. Bit for bit, whatever blocking it uses.
    size_t exact = 0;
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t oc = 0; oc < M; ++oc)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            float v = b[static_cast<size_t>(oc)];
            for (int64_t kh = 0; kh < c.K; ++kh)
              for (int64_t kw = 0; kw < c.K; ++kw) {
                const int64_t ih = oh * c.s - c.pt + kh, iw = ow * c.s - c.pl + kw;
                const bool in = ih >= 0 && ih < c.H && iw >= 0 && iw < c.W;
                const float xv = in ? x[static_cast<size_t>(((n * c.C + oc / c.mult) * c.H + ih) * c.W + iw)] : 0.0f;
                v = std::fma(w[static_cast<size_t>((oc * c.K + kh) * c.K + kw)], xv, v);
              }
            exact += v == d1[static_cast<size_t>(((n * M + oc) * OH + oh) * OW + ow)] ? 1 : 0;
          }
    CHECK(exact == ref.size());
#endif

    std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end()), bd(b.begin(), b.end());
    const Tensor yd = OpTest("Conv", 11)
                          .in(tensor<double>({c.N, c.C, c.H, c.W}, xd))
                          .in(tensor<double>({M, 1, c.K, c.K}, wd))
                          .in(tensor<double>({M}, bd))
                          .i("group", c.C)
                          .is("strides", {c.s, c.s})
                          .is("pads", {c.pt, c.pl, c.pb, c.pr})
                          .run1();
    auto dd = yd.data<double>();
    double mdd = 0;
    for (size_t i = 0; i < ref.size(); ++i) mdd = std::max(mdd, std::abs(ref[i] - dd[i]));
    CHECK(mdd < 1e-12);
  }
}

TEST_CASE("Conv: 1x1 and im2col GEMM paths with bias, odd widths, position or channel splits") {
  struct Case {
    int64_t C, M, H, W, K, p;
  };
  // The last two have narrow maps and enough channels for 2 threads to split the channels.
  const Case cases[] = {{16, 13, 9, 37, 1, 0}, {5, 7, 7, 7, 3, 1}, {3, 32, 14, 15, 3, 1},
                        {20, 30, 5, 7, 1, 0},  {8, 25, 6, 6, 3, 1}};
  unsigned seed = 950;
  for (const Case& c : cases) {
    CAPTURE(c.K);
    const auto x = random_values(c.C * c.H * c.W, seed++);
    const auto w = random_values(c.M * c.C * c.K * c.K, seed++);
    const auto b = random_values(c.M, seed++);
    const int64_t OH = c.H + 2 * c.p - c.K + 1, OW = c.W + 2 * c.p - c.K + 1;
    auto run = [&](int threads) {
      return OpTest("Conv", 11)
          .in(tensor<float>({1, c.C, c.H, c.W}, x))
          .in(tensor<float>({c.M, c.C, c.K, c.K}, w))
          .in(tensor<float>({c.M}, b))
          .is("pads", {c.p, c.p, c.p, c.p})
          .threads(threads)
          .run1();
    };
    const Tensor y1 = run(1), y2 = run(2);
    auto d1 = y1.data<float>();
    auto d2 = y2.data<float>();
    double md = 0;
    bool same = true;
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b[static_cast<size_t>(m)];
          for (int64_t ci = 0; ci < c.C; ++ci)
            for (int64_t kh = 0; kh < c.K; ++kh)
              for (int64_t kw = 0; kw < c.K; ++kw) {
                const int64_t ih = oh - c.p + kh, iw = ow - c.p + kw;
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                acc += static_cast<double>(x[static_cast<size_t>((ci * c.H + ih) * c.W + iw)]) *
                       w[static_cast<size_t>(((m * c.C + ci) * c.K + kh) * c.K + kw)];
              }
          const size_t i = static_cast<size_t>((m * OH + oh) * OW + ow);
          md = std::max(md, std::abs(acc - d1[i]));
          same = same && d1[i] == d2[i];
        }
    CHECK(md < 1e-4);
    if (backends::cpu::cpu_avx512())
      CHECK(same);
    else
      MESSAGE("no AVX-512 kernels here (CPU or MCC_CPU_ISA): 1 and 2 threads not compared");
  }
}

TEST_CASE("Conv: 1x1 convs on small maps (channels in the lanes) equal an in-order sum, + bias, then Relu") {
  // Weights are initializers, so the kernel packs W^T; 7x7 and 9x11 maps fill 32-position tiles
  // poorly and take the channels-in-lanes GEMM: M = 48 is a 32-channel and a 16-channel chunk.
  // C = 300 and 960 walk K in several blocks (the running sums leave the registers between them).
  struct Case {
    int64_t N, C, M, H, W;
  };
  for (const Case& c : {Case{2, 40, 48, 7, 7}, Case{1, 24, 16, 9, 11}, Case{1, 7, 32, 3, 5},
                        Case{1, 300, 48, 7, 7}, Case{2, 960, 32, 5, 5}}) {
    CAPTURE(c.M);
    CAPTURE(c.C);
    CAPTURE(c.H);
    const int64_t P = c.H * c.W;
    const auto x = random_values(c.N * c.C * P, 70);
    const auto w = random_values(c.M * c.C, 71);
    const auto b = random_values(c.M, 72);
    const auto m = pointwise_model(c.M, c.C, w, &b, true, false);
    auto run = [&](bool fuse, int threads) {
      backends::ExecOptions o;
      o.threads = threads;
      o.fuse = fuse;
      backends::Executor ex(*m, o);
      return ex.run({{"x", backends::RValue::of(tensor<float>({c.N, c.C, c.H, c.W}, x))}}).at(0).tensor;
    };
    const Tensor fused = run(true, 1), fused2 = run(true, 2), plain = run(false, 1);
    // f32 rounding grows with K.
    check_in_order_relu(fused, fused2, plain, c.N, c.M, P, c.C, b, 1e-5 * static_cast<double>(std::max<int64_t>(1, c.C / 40)),
                        [&](int64_t n, int64_t o, int64_t p, int64_t k) {
                          return std::pair<float, float>{w[static_cast<size_t>(o * c.C + k)],
                                                         x[static_cast<size_t>((n * c.C + k) * P + p)]};
                        });
  }
}

TEST_CASE("Conv: a strided 1-D conv on few frames (an STFT) runs channels in lanes: an in-order sum, + bias, then Relu") {
  // 97 and 99 frames fill 32-position tiles poorly, so with M >= 128 the im2col goes through the
  // channels-in-lanes GEMM; M = 129 and 257 are not multiples of 16 (zero-padded weights, rows
  // past M not stored), K = 2 x 96 and 512 cross K blocks; M = 33 takes the im2col GEMM.
  struct Case {
    int64_t N, C, M, KW, S, L;
  };
  for (const Case& c : {Case{1, 2, 129, 96, 24, 2400}, Case{1, 2, 33, 96, 24, 2400},
                        Case{2, 1, 257, 512, 160, 16000}}) {
    CAPTURE(c.M);
    const int64_t P = (c.L - c.KW) / c.S + 1, K = c.C * c.KW;
    const auto x = random_values(c.N * c.C * c.L, 80);
    const auto w = random_values(c.M * K, 81);
    const auto b = random_values(c.M, 82);
    const auto m = strided_1d_model(c.M, c.C, c.KW, c.S, w, b);
    auto run = [&](bool fuse, int threads) {
      backends::ExecOptions o;
      o.threads = threads;
      o.fuse = fuse;
      backends::Executor ex(*m, o);
      return ex.run({{"x", backends::RValue::of(tensor<float>({c.N, c.C, c.L}, x))}}).at(0).tensor;
    };
    const Tensor fused = run(true, 1), fused2 = run(true, 2), plain = run(false, 1);
    REQUIRE(fused.dims() == std::vector<int64_t>{c.N, c.M, P});
    check_in_order_relu(fused, fused2, plain, c.N, c.M, P, K, b, 1e-4, [&](int64_t n, int64_t o, int64_t p, int64_t k) {
      const int64_t ci = k / c.KW, kw = k % c.KW;
      return std::pair<float, float>{w[static_cast<size_t>(o * K + k)],
                                     x[static_cast<size_t>((n * c.C + ci) * c.L + p * c.S + kw)]};
    });
  }
}

TEST_CASE("Conv: a 1x1 weight initializer that is also a graph input runs as fed, small maps included") {
  // The channels-in-lanes GEMM packs W^T from constant weights only; a fed W must be what runs.
  const int64_t C = 24, M = 32, H = 7, W = 7;
  const auto x = random_values(C * H * W, 80);
  const auto w_init = random_values(M * C, 81), w_fed = random_values(M * C, 82);
  // The same weight fed to an overridable initializer and held by a constant one.
  const auto fed = pointwise_model(M, C, w_init, nullptr, false, true);
  const auto constant = pointwise_model(M, C, w_fed, nullptr, false, false);
  backends::ExecOptions o;
  o.threads = 1;
  backends::Executor ef(*fed, o), ec(*constant, o);
  const Tensor xt = tensor<float>({1, C, H, W}, x);
  const Tensor a = ef.run({{"x", backends::RValue::of(xt)}, {"w", backends::RValue::of(tensor<float>({M, C, 1, 1}, w_fed))}}).at(0).tensor;
  const Tensor b = ec.run({{"x", backends::RValue::of(xt)}}).at(0).tensor;
  const Tensor d = ef.run({{"x", backends::RValue::of(xt)}}).at(0).tensor;  // no feed: the initializer
  REQUIRE(a.dims() == b.dims());
  auto da = a.data<float>(), db = b.data<float>(), dd = d.data<float>();
  size_t same = 0, differs = 0;
  for (size_t i = 0; i < da.size(); ++i) {
    same += da[i] == db[i];
    differs += dd[i] != db[i];
  }
  CHECK(same == da.size());
  CHECK(differs > 0);
}
