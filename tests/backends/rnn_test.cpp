// LSTM, GRU and RNN kernels: one- and two-step cases computed by hand, and consistency checks
// (bidirectional = forward + reverse, layout 1 = transposed layout 0, sequence_lens = shorter
// run, f16/f64 = f32).
#include <doctest/doctest.h>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;

namespace {

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Runs one recurrent node; an undefined tensor is an omitted input.
std::vector<RValue> run_cell(const std::string& op, const std::vector<ir::Tensor>& ins, int n_out,
                             const std::vector<ir::Attribute>& attrs, int opset = 14) {
  OpTest t(op, opset);
  for (const auto& x : ins) t.in(x);
  return t.outs(n_out).attrs(attrs).run_values();
}

}  // namespace

TEST_CASE("RNN two steps with bias match hand computation") {
  auto r = run_cell("RNN",
                    {tensor<float>({2, 1, 1}, {1.f, 2.f}), tensor<float>({1, 1, 1}, {0.5f}),
                     tensor<float>({1, 1, 1}, {0.5f}), tensor<float>({1, 2}, {0.1f, 0.2f})},
                    2, {attr_i("hidden_size", 1)});
  const double h1 = std::tanh(0.8), h2 = std::tanh(1.0 + 0.5 * h1 + 0.3);
  CHECK(r[0].tensor.dims() == std::vector<int64_t>{2, 1, 1, 1});
  CHECK(close(values(r[0].tensor), {h1, h2}));
  CHECK(close(values(r[1].tensor), {h2}));
}

TEST_CASE("LSTM one step with initial state and peepholes matches hand computation") {
  const ir::Tensor x = tensor<float>({1, 1, 1}, {0.5f});
  const ir::Tensor w = tensor<float>({1, 4, 1}, {1.f, 2.f, 3.f, 4.f});  // i, o, f, c
  const ir::Tensor rw = tensor<float>({1, 4, 1}, {0.f, 0.f, 0.f, 0.f});
  const ir::Tensor h0 = tensor<float>({1, 1, 1}, {0.f});
  const ir::Tensor c0 = tensor<float>({1, 1, 1}, {1.f});
  const ir::Tensor p = tensor<float>({1, 3}, {0.1f, 0.2f, 0.3f});  // i, o, f
  auto r = run_cell("LSTM", {x, w, rw, ir::Tensor(), ir::Tensor(), h0, c0, p}, 3, {attr_i("hidden_size", 1)});
  const double i = sig(0.5 + 0.1), f = sig(1.5 + 0.3), g = std::tanh(2.0);
  const double c = f * 1.0 + i * g;
  const double o = sig(1.0 + 0.2 * c);
  const double h = o * std::tanh(c);
  CHECK(close(values(r[0].tensor), {h}));
  CHECK(close(values(r[1].tensor), {h}));
  CHECK(close(values(r[2].tensor), {c}));

  SUBCASE("input_forget couples the forget gate to 1 - i") {
    auto q = run_cell("LSTM", {x, w, rw, ir::Tensor(), ir::Tensor(), h0, c0}, 3,
                      {attr_i("hidden_size", 1), attr_i("input_forget", 1)});
    const double i2 = sig(0.5), c2 = (1 - i2) * 1.0 + i2 * g, h2 = sig(1.0) * std::tanh(c2);
    CHECK(close(values(q[2].tensor), {c2}));
    CHECK(close(values(q[1].tensor), {h2}));
  }
  SUBCASE("clip bounds the gate pre-activations") {
    auto q = run_cell("LSTM", {x, w, rw, ir::Tensor(), ir::Tensor(), h0, c0}, 3,
                      {attr_i("hidden_size", 1), attr_f("clip", 0.25f)});
    const double c3 = sig(0.25) * 1.0 + sig(0.25) * std::tanh(0.25), h3 = sig(0.25) * std::tanh(c3);
    CHECK(close(values(q[1].tensor), {h3}));
  }
}

TEST_CASE("GRU one step, linear_before_reset 0 and 1") {
  const ir::Tensor x = tensor<float>({1, 1, 1}, {1.f});
  const ir::Tensor w = tensor<float>({1, 3, 1}, {1.f, 2.f, 3.f});  // z, r, h
  const ir::Tensor rw = tensor<float>({1, 3, 1}, {0.5f, 0.5f, 0.5f});
  const ir::Tensor bias = tensor<float>({1, 6}, {0.f, 0.f, 0.1f, 0.f, 0.f, 0.2f});
  const ir::Tensor h0 = tensor<float>({1, 1, 1}, {0.5f});
  const double z = sig(1.25), r = sig(2.25);
  for (int lbr : {0, 1}) {
    auto q = run_cell("GRU", {x, w, rw, bias, ir::Tensor(), h0}, 2,
                      {attr_i("hidden_size", 1), attr_i("linear_before_reset", lbr)});
    const double hh = lbr ? std::tanh(3.1 + r * (0.25 + 0.2)) : std::tanh(3.1 + r * 0.5 * 0.5 + 0.2);
    const double h = (1 - z) * hh + z * 0.5;
    CHECK(close(values(q[1].tensor), {h}));
  }
}

TEST_CASE("Bidirectional LSTM equals a forward and a reverse run; layout 1 is the transpose") {
  const int64_t T = 3, B = 2, I = 2, H = 3;
  const auto xv = random_values(T * B * I, 1), wv = random_values(2 * 4 * H * I, 2), rv = random_values(2 * 4 * H * H, 3),
             bv = random_values(2 * 8 * H, 4);
  const ir::Tensor x = tensor<float>({T, B, I}, xv);
  auto half = [](const std::vector<float>& v, int d) {
    return std::vector<float>(v.begin() + d * v.size() / 2, v.begin() + (d + 1) * v.size() / 2);
  };
  auto bi = run_cell("LSTM",
                     {x, tensor<float>({2, 4 * H, I}, wv), tensor<float>({2, 4 * H, H}, rv), tensor<float>({2, 8 * H}, bv)},
                     3, {attr_i("hidden_size", H), attr_s("direction", "bidirectional")});
  const auto ybi = values(bi[0].tensor);  // [T, 2, B, H]
  for (int d = 0; d < 2; ++d) {
    auto one = run_cell("LSTM",
                        {x, tensor<float>({1, 4 * H, I}, half(wv, d)), tensor<float>({1, 4 * H, H}, half(rv, d)),
                         tensor<float>({1, 8 * H}, half(bv, d))},
                        3, {attr_i("hidden_size", H), attr_s("direction", d ? "reverse" : "forward")});
    const auto y1 = values(one[0].tensor);
    std::vector<double> part;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t k = 0; k < B * H; ++k) part.push_back(ybi[(t * 2 + d) * B * H + k]);
    CHECK(close(part, y1));
    const auto yh = values(bi[1].tensor);
    CHECK(close(std::vector<double>(yh.begin() + d * B * H, yh.begin() + (d + 1) * B * H), values(one[1].tensor)));
  }

  // layout 1: X [B, T, I], Y [B, T, D, H], Y_h [B, D, H].
  std::vector<float> xt(xv.size());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < I; ++i) xt[(b * T + t) * I + i] = xv[(t * B + b) * I + i];
  auto l1 = run_cell("LSTM",
                     {tensor<float>({B, T, I}, xt), tensor<float>({2, 4 * H, I}, wv), tensor<float>({2, 4 * H, H}, rv),
                      tensor<float>({2, 8 * H}, bv)},
                     3, {attr_i("hidden_size", H), attr_s("direction", "bidirectional"), attr_i("layout", 1)});
  CHECK(l1[0].tensor.dims() == std::vector<int64_t>{B, T, 2, H});
  const auto y1 = values(l1[0].tensor);
  bool same = true;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          same = same && std::fabs(y1[((b * T + t) * 2 + d) * H + h] - ybi[((t * 2 + d) * B + b) * H + h]) < 1e-6;
  CHECK(same);
  CHECK(l1[2].tensor.dims() == std::vector<int64_t>{B, 2, H});
}

TEST_CASE("GRU sequence_lens: a short batch entry equals a run on its own prefix, padded with zeros") {
  const int64_t T = 3, B = 2, I = 2, H = 2;
  const auto xv = random_values(T * B * I, 5), wv = random_values(3 * H * I, 6), rv = random_values(3 * H * H, 7);
  const ir::Tensor w = tensor<float>({1, 3 * H, I}, wv), r = tensor<float>({1, 3 * H, H}, rv);
  for (const char* dir : {"forward", "reverse"}) {
    auto full = run_cell("GRU", {tensor<float>({T, B, I}, xv), w, r, ir::Tensor(), tensor<int32_t>({2}, {3, 2})}, 2,
                         {attr_i("hidden_size", H), attr_s("direction", dir)});
    std::vector<float> x1;  // batch entry 1, first two steps
    for (int64_t t = 0; t < 2; ++t)
      for (int64_t i = 0; i < I; ++i) x1.push_back(xv[(t * B + 1) * I + i]);
    auto alone = run_cell("GRU", {tensor<float>({2, 1, I}, x1), w, r}, 2,
                          {attr_i("hidden_size", H), attr_s("direction", dir)});
    const auto yf = values(full[0].tensor), ya = values(alone[0].tensor);
    std::vector<double> got;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) got.push_back(yf[(t * B + 1) * H + h]);
    std::vector<double> want(ya.begin(), ya.end());
    want.insert(want.end(), H, 0.0);
    CHECK(close(got, want));
    const auto yh = values(full[1].tensor);
    CHECK(close(std::vector<double>(yh.begin() + H, yh.end()), values(alone[1].tensor)));
  }
}

TEST_CASE("LSTM in f16 and f64 matches f32") {
  const int64_t T = 2, B = 1, I = 3, H = 2;
  const auto xv = random_values(T * B * I, 8), wv = random_values(4 * H * I, 9), rv = random_values(4 * H * H, 10);
  auto ref = run_cell("LSTM", {tensor<float>({T, B, I}, xv), tensor<float>({1, 4 * H, I}, wv), tensor<float>({1, 4 * H, H}, rv)},
                      1, {attr_i("hidden_size", H)});
  auto to = [](const std::vector<float>& v, auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> o;
    for (float f : v) o.push_back(static_cast<T>(f));
    return o;
  };
  auto h16 = run_cell("LSTM",
                      {tensor<f16>({T, B, I}, to(xv, ir::TypeTag<f16>{})), tensor<f16>({1, 4 * H, I}, to(wv, ir::TypeTag<f16>{})),
                       tensor<f16>({1, 4 * H, H}, to(rv, ir::TypeTag<f16>{}))},
                      1, {attr_i("hidden_size", H)});
  CHECK(h16[0].tensor.dtype() == ir::DType::F16);
  CHECK(close(values(h16[0].tensor), values(ref[0].tensor), 1e-2, 5e-3));
  auto h64 = run_cell("LSTM",
                      {tensor<double>({T, B, I}, to(xv, ir::TypeTag<double>{})), tensor<double>({1, 4 * H, I}, to(wv, ir::TypeTag<double>{})),
                       tensor<double>({1, 4 * H, H}, to(rv, ir::TypeTag<double>{}))},
                      1, {attr_i("hidden_size", H)});
  CHECK(h64[0].tensor.dtype() == ir::DType::F64);
  CHECK(close(values(h64[0].tensor), values(ref[0].tensor), 1e-5, 1e-6));
}

TEST_CASE("RNN activations with alpha/beta (Affine, LeakyRelu)") {
  const ir::Tensor x = tensor<float>({1, 1, 1}, {-2.f});
  const ir::Tensor w = tensor<float>({1, 1, 1}, {1.f});
  const ir::Tensor r = tensor<float>({1, 1, 1}, {0.f});
  auto a = run_cell("RNN", {x, w, r}, 1,
                    {attr_i("hidden_size", 1), attr_ss("activations", {"Affine"}), attr_fs("activation_alpha", {3.f}),
                     attr_fs("activation_beta", {1.f})});
  CHECK(close(values(a[0].tensor), {-5.0}));
  auto l = run_cell("RNN", {x, w, r}, 1, {attr_i("hidden_size", 1), attr_ss("activations", {"LeakyRelu"})});
  CHECK(close(values(l[0].tensor), {-0.02}));
}

TEST_CASE("Recurrent layers reject bad shapes and attributes") {
  const ir::Tensor x = tensor<float>({1, 1, 2}, {1.f, 2.f});
  const ir::Tensor w = tensor<float>({1, 4, 2}, std::vector<float>(8, 0.1f));
  const ir::Tensor r = tensor<float>({1, 4, 1}, std::vector<float>(4, 0.1f));
  CHECK_NOTHROW(run_cell("LSTM", {x, w, r}, 1, {attr_i("hidden_size", 1)}));
  CHECK_THROWS_AS(run_cell("LSTM", {x, tensor<float>({1, 4, 3}, std::vector<float>(12, 0.f)), r}, 1, {attr_i("hidden_size", 1)}),
                  ModelError);
  CHECK_THROWS_AS(run_cell("LSTM", {x, w, r}, 1, {attr_i("hidden_size", 1), attr_s("direction", "sideways")}), ModelError);
  CHECK_THROWS_AS(run_cell("LSTM", {x, w, r}, 1, {attr_i("hidden_size", 1), attr_ss("activations", {"Sigmoid", "Foo", "Tanh"})}),
                  UnsupportedError);
  CHECK_THROWS_AS(run_cell("LSTM", {tensor<int32_t>({1, 1, 2}, {1, 2}), w, r}, 1, {attr_i("hidden_size", 1)}), UnsupportedError);
}
