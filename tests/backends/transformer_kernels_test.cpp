// f32 kernels on the transformer hot path of the cpu backend: MatMul through the packed-panel
// GEMM (row/column/K-block remainders, batches, broadcasting, a constant B packed once and
// reused), Softmax/LogSoftmax through the vectorised row path, checked against exact math in
// double, and byte-identical outputs for 1 and 2 threads.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/matmul_f32.h"
#include "backends/executor.h"
#include "support/graph_builder.h"

using namespace mcc;
using namespace mcc::test;

namespace {

std::vector<float> uniform(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

int64_t numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

// One node `op` (at `opset`) on the given inputs, run on the cpu executor with `threads` threads;
// all `outs` outputs.
std::vector<ir::Tensor> run_node_outs(const std::string& op, const std::vector<ir::Tensor>& ins, int threads,
                                      std::vector<ir::Attribute> attrs, int outs, int opset) {
  ir::Model m = empty_model(opset);
  ir::Graph& g = *m.graph;
  std::vector<ir::Value*> vals;
  std::vector<std::pair<std::string, backends::RValue>> feeds;
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    vals.push_back(&add_input(g, name, ins[i].dims()));
    feeds.emplace_back(name, backends::RValue::of(ins[i]));
  }
  std::vector<std::string> names;
  for (int k = 0; k < outs; ++k) names.push_back("Y" + std::to_string(k));
  ir::Node& n = add_node(g, op, "n", vals, names, opset, std::move(attrs));
  for (int k = 0; k < outs; ++k) mark_output(g, *n.outputs[static_cast<size_t>(k)]);
  backends::Executor ex(m, backends::ExecOptions{threads});
  std::vector<ir::Tensor> out;
  for (auto& v : ex.run(feeds)) out.push_back(v.tensor);
  return out;
}

ir::Tensor run_node(const std::string& op, const std::vector<ir::Tensor>& ins, int threads,
                    std::vector<ir::Attribute> attrs = {}) {
  return run_node_outs(op, ins, threads, std::move(attrs), 1, 13).at(0);
}

bool same_bytes(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dims() == b.dims() && a.dtype() == b.dtype() && a.numel() == b.numel() &&
         std::memcmp(a.data<float>().data(), b.data<float>().data(), sizeof(float) * a.numel()) == 0;
}

// numpy matmul of row-major a [..., M, K] and b [..., K, N] (rank >= 2, batch broadcast) in double;
// `bound` gets sum_k |a||b| per output (the scale of its rounding error).
std::vector<double> matmul_ref(const std::vector<float>& a, std::vector<int64_t> ad, const std::vector<float>& b,
                               std::vector<int64_t> bd, std::vector<int64_t>& od, std::vector<double>& bound) {
  const int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
  std::vector<int64_t> ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
  while (ab.size() < bb.size()) ab.insert(ab.begin(), 1);
  while (bb.size() < ab.size()) bb.insert(bb.begin(), 1);
  std::vector<int64_t> ob(ab.size());
  for (size_t i = 0; i < ab.size(); ++i) ob[i] = std::max(ab[i], bb[i]);
  od = ob;
  od.push_back(M);
  od.push_back(N);
  const int64_t batches = numel(ob);
  std::vector<double> y(static_cast<size_t>(batches * M * N));
  bound.assign(y.size(), 0.0);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t rem = i, oa = 0, obb = 0, sa = 1, sb = 1;
    for (size_t d = ob.size(); d-- > 0;) {
      const int64_t idx = rem % ob[d];
      rem /= ob[d];
      oa += (ab[d] == 1 ? 0 : idx) * sa;
      obb += (bb[d] == 1 ? 0 : idx) * sb;
      sa *= ab[d];
      sb *= bb[d];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0, s_abs = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = static_cast<double>(a[(oa * M + m) * K + k]) * b[(obb * K + k) * N + n];
          s += p;
          s_abs += std::abs(p);
        }
        y[(i * M + m) * N + n] = s;
        bound[(i * M + m) * N + n] = s_abs;
      }
  }
  return y;
}

void check_matmul(const ir::Tensor& y, const std::vector<int64_t>& od, const std::vector<double>& ref,
                  const std::vector<double>& bound) {
  REQUIRE(y.dims() == od);
  auto v = y.data<float>();
  int64_t bad = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    if (!(std::abs(v[i] - ref[i]) <= 2e-6 * bound[i] + 1e-30)) ++bad;
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("f32 MatMul matches double math for remainder shapes, K blocks, batches and broadcasts") {
  struct Case { std::vector<int64_t> a, b; };
  const std::vector<Case> cases = {
      {{13, 7}, {7, 17}},              // row and column remainders (8 + 5 rows, 16 + 1 columns)
      {{1, 600}, {600, 40}},           // three K blocks
      {{9, 300}, {300, 16}},           // exactly half a panel
      {{2, 3, 10, 33}, {2, 3, 33, 50}},  // batched, each B packed per batch
      {{2, 1, 5, 20}, {3, 20, 64}},    // A broadcast over B's batch
      {{4, 130, 64}, {64, 96}},        // A's batches folded into rows of one product
      {{3, 1, 40}, {40, 130}},         // more panels than rows
      {{5, 20}, {20, 8}},              // N < 16: the Eigen path
      {{3, 0}, {0, 20}},               // K = 0: zeros
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    CAPTURE(c.a);
    CAPTURE(c.b);
    const auto av = uniform(numel(c.a), seed++, -1.f, 1.f), bv = uniform(numel(c.b), seed++, -1.f, 1.f);
    std::vector<int64_t> od;
    std::vector<double> bound;
    const auto ref = matmul_ref(av, c.a, bv, c.b, od, bound);
    const auto at = ir::Tensor::from_vector<float>(c.a, av), bt = ir::Tensor::from_vector<float>(c.b, bv);
    const ir::Tensor y1 = run_node("MatMul", {at, bt}, 1);
    const ir::Tensor y2 = run_node("MatMul", {at, bt}, 2);
    check_matmul(y1, od, ref, bound);
    if (backends::cpu::matmul_f32_available())
      CHECK(same_bytes(y1, y2));
    else
      MESSAGE("Eigen's GEMM (MCC_CPU_ISA=eigen or no AVX2): 1 and 2 threads not compared");
  }
}

TEST_CASE("f32 MatMul with an initializer B packs it once and stays right on later runs") {
  ir::Model m = empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "X", {2, 21, 70});
  const std::vector<int64_t> wd{70, 45};
  const auto wv = uniform(numel(wd), 7, -1.f, 1.f);
  ir::Value& w = g.add_initializer("W", ir::Tensor::from_vector<float>(wd, wv));
  ir::Node& n = add_node(g, "MatMul", "mm", {&x, &w}, {"Y"}, 13);
  mark_output(g, *n.outputs[0]);
  for (int threads : {1, 2}) {
    backends::Executor ex(m, backends::ExecOptions{threads});
    for (uint32_t run = 0; run < 3; ++run) {
      const std::vector<int64_t> xd{2, 21, 70};
      const auto xv = uniform(numel(xd), 100 + run, -2.f, 2.f);
      std::vector<int64_t> od;
      std::vector<double> bound;
      const auto ref = matmul_ref(xv, xd, wv, wd, od, bound);
      const auto out = ex.run({{"X", backends::RValue::of(ir::Tensor::from_vector<float>(xd, xv))}});
      check_matmul(out.at(0).tensor, od, ref, bound);
    }
  }
}

TEST_CASE("f32 Gemm with an initializer B (a Linear layer) packs it once: transB, C broadcasts, beta") {
  struct Case {
    int64_t M, K, N;
    bool tb;
    std::vector<int64_t> cd;  // C's shape; empty: no C
    float beta;
  };
  const std::vector<Case> cases = {{1, 64, 384, true, {384}, 1.f},     {13, 70, 45, false, {13, 45}, 0.5f},
                                   {5, 33, 17, true, {1, 1}, 2.f},      {7, 20, 40, false, {}, 1.f},
                                   {30, 128, 1000, true, {1, 1000}, 1.f}};
  uint32_t seed = 300;
  for (const Case& c : cases) {
    CAPTURE(c.M);
    CAPTURE(c.N);
    ir::Model m = empty_model(13);
    ir::Graph& g = *m.graph;
    ir::Value& x = add_input(g, "X", {c.M, c.K});
    const std::vector<int64_t> wd = c.tb ? std::vector<int64_t>{c.N, c.K} : std::vector<int64_t>{c.K, c.N};
    const auto wv = uniform(numel(wd), seed++, -1.f, 1.f);
    std::vector<ir::Value*> ins{&x, &g.add_initializer("W", ir::Tensor::from_vector<float>(wd, wv))};
    const auto cv = uniform(c.cd.empty() ? 0 : numel(c.cd), seed++, -1.f, 1.f);
    if (!c.cd.empty()) ins.push_back(&g.add_initializer("C", ir::Tensor::from_vector<float>(c.cd, cv)));
    ir::Node& n = add_node(g, "Gemm", "fc", ins, {"Y"}, 13, {attr_i("transB", c.tb ? 1 : 0), attr_f("beta", c.beta)});
    mark_output(g, *n.outputs[0]);
    std::vector<ir::Tensor> by_threads;
    for (int threads : {1, 2}) {
      backends::Executor ex(m, backends::ExecOptions{threads});
      for (uint32_t run = 0; run < 2; ++run) {
        const auto xv = uniform(c.M * c.K, 500 + run, -2.f, 2.f);
        const auto out = ex.run({{"X", backends::RValue::of(ir::Tensor::from_vector<float>({c.M, c.K}, xv))}});
        const ir::Tensor& y = out.at(0).tensor;
        REQUIRE(y.dims() == std::vector<int64_t>{c.M, c.N});
        auto yd = y.data<float>();
        double worst = 0;
        for (int64_t i = 0; i < c.M; ++i)
          for (int64_t j = 0; j < c.N; ++j) {
            double acc = 0, mag = 0;
            for (int64_t k = 0; k < c.K; ++k) {
              const double w = wv[static_cast<size_t>(c.tb ? j * c.K + k : k * c.N + j)];
              acc += xv[static_cast<size_t>(i * c.K + k)] * w;
              mag += std::abs(xv[static_cast<size_t>(i * c.K + k)] * w);
            }
            if (!c.cd.empty()) {
              const int64_t ci = c.cd.size() == 2 && c.cd[0] > 1 ? i : 0;
              const int64_t cj = c.cd.back() > 1 ? j : 0;
              acc += c.beta * cv[static_cast<size_t>(ci * c.cd.back() + cj)];
            }
            worst = std::max(worst, std::abs(acc - yd[static_cast<size_t>(i * c.N + j)]) / (mag + 1));
          }
        CHECK(worst < 1e-6);
        if (run == 0) by_threads.push_back(y);
      }
    }
    if (backends::cpu::matmul_f32_available()) CHECK(same_bytes(by_threads[0], by_threads[1]));
  }
}

TEST_CASE("f32 Softmax and LogSoftmax match double math along the last and a middle axis") {
  const std::vector<int64_t> dims{2, 3, 7, 129};
  auto v = uniform(numel(dims), 11, -12.f, 12.f);
  // Rows as an attention mask leaves them: most entries pushed to -3.4e38, one row all masked but one.
  for (int64_t j = 60; j < 129; ++j) v[static_cast<size_t>(j)] = -3.4e38f;
  for (int64_t j = 1; j < 129; ++j) v[static_cast<size_t>(129 + j)] = -3.4e38f;
  const auto x = ir::Tensor::from_vector<float>(dims, v);
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t axis : {-1, 1}) {
      CAPTURE(op);
      CAPTURE(axis);
      const bool log = std::string(op) == "LogSoftmax";
      const int64_t ax = axis < 0 ? 3 : axis;
      int64_t outer = 1, d = dims[ax], inner = 1;
      for (int64_t i = 0; i < ax; ++i) outer *= dims[i];
      for (int64_t i = ax + 1; i < 4; ++i) inner *= dims[i];
      std::vector<double> ref(v.size());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          auto at = [&](int64_t j) { return static_cast<size_t>((o * d + j) * inner + in); };
          double mx = -INFINITY, s = 0;
          for (int64_t j = 0; j < d; ++j) mx = std::max(mx, static_cast<double>(v[at(j)]));
          for (int64_t j = 0; j < d; ++j) s += std::exp(v[at(j)] - mx);
          for (int64_t j = 0; j < d; ++j)
            ref[at(j)] = log ? v[at(j)] - mx - std::log(s) : std::exp(v[at(j)] - mx) / s;
        }
      const ir::Tensor y1 = run_node(op, {x}, 1, {attr_i("axis", axis)});
      const ir::Tensor y2 = run_node(op, {x}, 2, {attr_i("axis", axis)});
      REQUIRE(y1.dims() == dims);
      auto y = y1.data<float>();
      int64_t bad = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        const double tol = log ? 2e-6 * std::max(1.0, std::abs(ref[i])) : 1e-6 * ref[i] + 1e-9;
        if (!(std::abs(y[i] - ref[i]) <= tol)) ++bad;
      }
      CHECK(bad == 0);
      if (!log && axis == -1) {
        CHECK(y[0] > 0.f);
        CHECK(y[70] == 0.f);      // a masked entry is exactly zero
        CHECK(y[129] == 1.f);     // the row with one entry left
      }
      CHECK(same_bytes(y1, y2));
    }
}

TEST_CASE("f32 LayerNormalization matches double math, with Mean and InvStdDev, for row tails and offsets") {
  const std::vector<int64_t> dims{3, 5, 100};
  for (int64_t axis : {-1, 1}) {
    for (float offset : {0.f, 1000.f}) {
      CAPTURE(axis);
      CAPTURE(offset);
      auto v = uniform(numel(dims), 21, -3.f, 3.f);
      for (auto& x : v) x += offset;  // a large mean with a small spread: the stable variance matters
      const int64_t inner = axis == -1 ? 100 : 500, outer = numel(dims) / inner;
      const std::vector<int64_t> pd = axis == -1 ? std::vector<int64_t>{100} : std::vector<int64_t>{5, 100};
      const auto sc = uniform(inner, 22, 0.5f, 1.5f), bi = uniform(inner, 23, -1.f, 1.f);
      const std::vector<ir::Tensor> ins = {ir::Tensor::from_vector<float>(dims, v),
                                           ir::Tensor::from_vector<float>(pd, sc),
                                           ir::Tensor::from_vector<float>(pd, bi)};
      const float eps = 1e-5f;
      const auto o1 = run_node_outs("LayerNormalization", ins, 1, {attr_i("axis", axis), attr_f("epsilon", eps)}, 3, 17);
      const auto o2 = run_node_outs("LayerNormalization", ins, 2, {attr_i("axis", axis), attr_f("epsilon", eps)}, 3, 17);
      REQUIRE(o1.size() == 3);
      REQUIRE(o1[0].dims() == dims);
      auto y = o1[0].data<float>(), mean = o1[1].data<float>(), inv = o1[2].data<float>();
      REQUIRE(static_cast<int64_t>(mean.size()) == outer);
      int64_t bad = 0;
      for (int64_t o = 0; o < outer; ++o) {
        double m = 0, var = 0;
        for (int64_t i = 0; i < inner; ++i) m += v[static_cast<size_t>(o * inner + i)];
        m /= static_cast<double>(inner);
        for (int64_t i = 0; i < inner; ++i) {
          const double d = v[static_cast<size_t>(o * inner + i)] - m;
          var += d * d;
        }
        var /= static_cast<double>(inner);
        const double is = 1.0 / std::sqrt(var + eps);
        if (!(std::abs(mean[o] - m) <= 1e-6 * std::abs(m) + 1e-6)) ++bad;
        if (!(std::abs(inv[o] - is) <= 1e-6 * is)) ++bad;
        for (int64_t i = 0; i < inner; ++i) {
          const size_t k = static_cast<size_t>(o * inner + i);
          const double want = (v[k] - m) * is * sc[static_cast<size_t>(i)] + bi[static_cast<size_t>(i)];
          // x - mean is formed in f32: its rounding (|x| ulp) bounds the error together with 1e-6 relative.
          const double tol = 1e-6 * std::abs(want) + 2e-7 * (std::abs(v[k]) + 1) * is * sc[static_cast<size_t>(i)];
          if (!(std::abs(y[k] - want) <= tol)) ++bad;
        }
      }
      CHECK(bad == 0);
      for (int k = 0; k < 3; ++k) CHECK(same_bytes(o1[static_cast<size_t>(k)], o2[static_cast<size_t>(k)]));
    }
  }
}

namespace {

// X [2, 7, K] -> MatMul(W [K, N]) -> Add(bias [N], .) [-> Div(sqrt 2) -> Erf -> Add(1) -> Mul(v, .)
// -> Mul(0.5)] as PyTorch exports BERT's GELU; W, bias and the GELU constants are initializers.
ir::Model gelu_block(int64_t K, int64_t N, bool gelu, bool extra_reader) {
  ir::Model m = empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "X", {2, 7, K});
  ir::Value& w = g.add_initializer("W", ir::Tensor::from_vector<float>({K, N}, uniform(K * N, 31, -0.3f, 0.3f)));
  ir::Value& b = g.add_initializer("bias", ir::Tensor::from_vector<float>({N}, uniform(N, 32, -1.f, 1.f)));
  ir::Node& mm = add_node(g, "MatMul", "mm", {&x, &w}, {"mm_out"}, 13);
  ir::Node& add = add_node(g, "Add", "bias_add", {&b, mm.outputs[0]}, {"v"}, 13);
  ir::Value* v = add.outputs[0];
  if (extra_reader) {  // the MatMul output is read twice: nothing is fused
    ir::Node& r = add_node(g, "Relu", "relu", {mm.outputs[0]}, {"r"}, 13);
    mark_output(g, *r.outputs[0]);
  }
  if (!gelu) {
    mark_output(g, *v);
    return m;
  }
  auto scalar = [&](const std::string& name, float val) -> ir::Value* {
    return &g.add_initializer(name, ir::Tensor::from_vector<float>({}, {val}));
  };
  ir::Node& d = add_node(g, "Div", "div", {v, scalar("sqrt2", 1.4142135381698608f)}, {"d"}, 13);
  ir::Node& e = add_node(g, "Erf", "erf", {d.outputs[0]}, {"e"}, 13);
  ir::Node& a = add_node(g, "Add", "add1", {e.outputs[0], scalar("one", 1.f)}, {"a"}, 13);
  ir::Node& m1 = add_node(g, "Mul", "mul", {v, a.outputs[0]}, {"m1"}, 13);
  ir::Node& m2 = add_node(g, "Mul", "half", {m1.outputs[0], scalar("half", 0.5f)}, {"Y"}, 13);
  mark_output(g, *m2.outputs[0]);
  return m;
}

std::vector<ir::Tensor> run_model(const ir::Model& m, const ir::Tensor& x, int threads, bool fuse) {
  backends::ExecOptions o{threads};
  o.fuse = fuse;
  backends::Executor ex(m, o);
  std::vector<ir::Tensor> out;
  for (auto& v : ex.run({{"X", backends::RValue::of(x)}})) out.push_back(v.tensor);
  return out;
}

}  // namespace

TEST_CASE("f32 MatMul + bias Add + erf GELU fused on the cpu backend matches double math and the unfused nodes") {
  for (bool gelu : {true, false})
    for (bool extra : {false, true})
      for (auto [K, N] : std::vector<std::pair<int64_t, int64_t>>{{64, 96}, {37, 20}, {130, 8}}) {
        CAPTURE(gelu);
        CAPTURE(extra);
        CAPTURE(K);
        CAPTURE(N);
        const ir::Model m = gelu_block(K, N, gelu, extra);
        const std::vector<int64_t> xd{2, 7, K};
        const auto xv = uniform(numel(xd), 33, -2.f, 2.f);
        const auto x = ir::Tensor::from_vector<float>(xd, xv);
        const auto fused1 = run_model(m, x, 1, true), fused2 = run_model(m, x, 2, true);
        const auto plain = run_model(m, x, 1, false);
        REQUIRE(fused1.size() == plain.size());
        const ir::Tensor& w = *m.graph->initializers[0]->initializer;
        const ir::Tensor& b = *m.graph->initializers[1]->initializer;
        std::vector<int64_t> od;
        std::vector<double> bound;
        const std::vector<float> wv(w.data<float>().begin(), w.data<float>().end());
        auto ref = matmul_ref(xv, xd, wv, {K, N}, od, bound);
        for (size_t i = 0; i < ref.size(); ++i) {
          ref[i] += b.data<float>()[i % static_cast<size_t>(N)];
          if (gelu) ref[i] = 0.5 * ref[i] * (1.0 + std::erf(ref[i] / std::sqrt(2.0)));
        }
        const ir::Tensor& y = fused1.back();  // Y (the Relu output comes first when present)
        REQUIRE(y.dims() == od);
        int64_t bad = 0, bad_plain = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
          // GEMM rounding (bound) carried through GELU (slope <= 1.13) plus f32 rounding of the epilogue.
          const double tol = 3e-6 * bound[i] + 2e-6 * std::abs(ref[i]) + 1e-6;
          if (!(std::abs(y.data<float>()[i] - ref[i]) <= tol)) ++bad;
          if (!(std::abs(y.data<float>()[i] - plain.back().data<float>()[i]) <= tol)) ++bad_plain;
        }
        CHECK(bad == 0);
        CHECK(bad_plain == 0);
        for (size_t k = 0; k < fused1.size(); ++k) CHECK(same_bytes(fused1[k], fused2[k]));
      }
}
