// Conv kernel fusion on the cpu backend: fused results equal the node-by-node results (f32
// tolerance) for every absorbed pattern and every conv path (im2col, 1x1, depthwise); fusion is
// off while an observer is set or values are kept; an activation whose input has a second reader
// is not fused. Also the depthwise paths (strides, dilations, asymmetric pads) against a direct loop.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "backends/cpu/kernels/conv_fusion.h"
#include "backends/executor.h"
#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::Tensor;

namespace {

struct ConvShape {
  int64_t C, M, K, G, s, p;
};

// X -> Conv(W, B) -> c, then `tail` (names the pattern); the graph output is "y".
std::unique_ptr<ir::Model> conv_model(const ConvShape& cs, const std::string& tail, unsigned seed) {
  auto m = std::make_unique<ir::Model>();
  m->ir_version = 8;
  m->opset_imports = {{"", 13}};
  m->graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *m->graph;
  ir::Value& x = g.add_value("x");
  x.dtype = ir::DType::F32;
  x.is_graph_input = true;
  g.inputs.push_back(&x);
  const int64_t cg = cs.C / cs.G;
  ir::Value& w = g.add_initializer("w", tensor<float>({cs.M, cg, cs.K, cs.K}, random_values(cs.M * cg * cs.K * cs.K, seed)));
  ir::Value& b = g.add_initializer("b", tensor<float>({cs.M}, random_values(cs.M, seed + 1)));
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, std::string out) -> ir::Value* {
    ir::Node& n = g.add_node(op, "", op + "_" + out, ins, {out});
    n.since_version = 13;
    return n.outputs[0];
  };
  ir::Node& conv = g.add_node("Conv", "", "conv", {&x, &w, &b}, {"c"});
  conv.since_version = 11;
  conv.set_attr(attr_i("group", cs.G));
  conv.set_attr(attr_is("strides", {cs.s, cs.s}));
  if (cs.K > 1) conv.set_attr(attr_is("pads", {cs.p, cs.p, cs.p + 1, cs.p}));
  ir::Value* c = conv.outputs[0];
  ir::Value* y = nullptr;
  auto per_channel = [&](const std::string& name, float lo, float hi, unsigned sd) -> ir::Value* {
    auto v = random_values(cs.M, sd);
    for (float& f : v) f = lo + (hi - lo) * (f + 1.f) / 2.f;
    return &g.add_initializer(name, tensor<float>({cs.M}, v));
  };
  if (tail == "relu") y = node("Relu", {c}, "y");
  else if (tail == "sigmoid") y = node("Sigmoid", {c}, "y");
  else if (tail == "silu") y = node("Mul", {node("Sigmoid", {c}, "s"), c}, "y");
  else if (tail == "hardswish") y = node("HardSwish", {c}, "y");
  else if (tail == "leaky") {
    y = node("LeakyRelu", {c}, "y");
    y->producer->set_attr(attr_f("alpha", 0.2f));
  } else if (tail == "hardsigmoid") y = node("HardSigmoid", {c}, "y");
  else if (tail == "clip") {
    ir::Value& lo = g.add_initializer("lo", scalar<float>(0.f));
    ir::Value& hi = g.add_initializer("hi", scalar<float>(0.5f));
    y = node("Clip", {c, &lo, &hi}, "y");
  } else if (tail == "clip_constant_nodes") {  // bounds from Constant nodes (as exporters write)
    ir::Value* lo = node("Constant", {}, "lo");
    lo->producer->set_attr(attr_t("value", scalar<float>(-0.25f)));
    ir::Value* hi = node("Constant", {}, "hi");
    hi->producer->set_attr(attr_t("value", scalar<float>(0.75f)));
    y = node("Clip", {c, lo, hi}, "y");
  } else if (tail == "bn_clip" || tail == "bn") {
    ir::Value* bn = node("BatchNormalization", {c, per_channel("sc", 0.5f, 2.f, seed + 2), per_channel("bb", -1.f, 1.f, seed + 3),
                                                per_channel("mu", -0.5f, 0.5f, seed + 4), per_channel("var", 0.1f, 2.f, seed + 5)},
                         tail == "bn" ? "y" : "n");
    y = tail == "bn" ? bn : node("Clip", {bn, &g.add_initializer("lo", scalar<float>(0.f)), &g.add_initializer("hi", scalar<float>(0.6f))}, "y");
  } else if (tail == "add_relu") {
    ir::Value& a = g.add_initializer("a", tensor<float>({cs.M, 1, 1}, random_values(cs.M, seed + 6)));
    y = node("Relu", {node("Add", {c, &a}, "a_out")}, "y");
  } else if (tail == "two_readers") {  // c is read by the Relu and by the Add
    y = node("Add", {c, node("Relu", {c}, "r")}, "y");
  } else if (tail == "conv_output") {  // c is a graph output too
    y = node("Relu", {c}, "y");
    g.outputs.push_back(c);
  }
  REQUIRE(y != nullptr);
  g.outputs.insert(g.outputs.begin(), y);
  return m;
}

Tensor run_model(const ir::Model& m, const Tensor& x, bool fuse, backends::Executor::Observer obs = {}) {
  backends::ExecOptions o;
  o.threads = 1;
  o.fuse = fuse;
  backends::Executor ex(m, o);
  if (obs) ex.set_observer(std::move(obs));
  return ex.run({{"x", backends::RValue::of(x)}}).at(0).tensor;
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dims() == b.dims());
  auto da = a.data<float>(), db = b.data<float>();
  double m = 0;
  for (size_t i = 0; i < da.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(da[i]) - db[i]) / (1.0 + std::abs(static_cast<double>(db[i]))));
  return m;
}

const ir::Node& node_named(const ir::Model& m, const std::string& name) {
  for (const ir::Node* n : m.graph->nodes())
    if (n->name == name) return *n;
  FAIL("no node " << name);
  throw 0;
}

const ConvShape kShapes[] = {
    {3, 5, 3, 1, 1, 1},   // im2col
    {8, 12, 1, 1, 1, 0},  // 1x1
    {8, 8, 3, 8, 1, 1},   // depthwise stride 1
    {8, 8, 3, 8, 2, 1},   // depthwise stride 2
    {24, 24, 3, 24, 1, 1}, // depthwise: a 16-channel group and a tail of 8
    {4, 8, 1, 1, 1, 0},
    {5, 13, 3, 1, 2, 1},  // strided im2col: 13 channels (tiles of 6 + 1), 30 positions (tail 30)
    {16, 48, 1, 1, 1, 0}, // 1x1, 99 positions: channels in the lanes (chunks of 32 and 16)
};

}  // namespace

TEST_CASE("Conv fusion: fused results equal node-by-node results for every pattern and conv path") {
  const char* tails[] = {"relu", "sigmoid", "silu", "hardswish", "leaky", "hardsigmoid", "clip", "clip_constant_nodes", "bn", "bn_clip", "add_relu"};
  unsigned seed = 10;
  for (const ConvShape& cs : kShapes)
    for (const char* tail : tails) {
      CAPTURE(tail);
      CAPTURE(cs.K);
      CAPTURE(cs.G);
      CAPTURE(cs.s);
      auto m = conv_model(cs, tail, seed);
      const auto fk = backends::cpu::fuse_conv(node_named(*m, "conv"));
      REQUIRE(fk.has_value());
      CHECK(fk->output == m->graph->outputs[0]);
      const Tensor x = tensor<float>({2, cs.C, 9, 11}, random_values(2 * cs.C * 99, seed + 7));
      const Tensor fused = run_model(*m, x, true), plain = run_model(*m, x, false);
      CHECK(max_rel_diff(fused, plain) < 1e-5);
      seed += 11;
    }
}

TEST_CASE("Conv fusion: off while an observer is set; intermediates are produced") {
  auto m = conv_model(kShapes[0], "bn_clip", 3);
  const Tensor x = tensor<float>({1, 3, 9, 11}, random_values(3 * 99, 4));
  std::map<std::string, Tensor> seen;
  const Tensor observed = run_model(*m, x, true, [&](const ir::Node&, const ir::Value& v, const backends::RValue& r) {
    seen[v.name] = r.tensor;
  });
  CHECK(seen.count("c") == 1);
  CHECK(seen.count("n") == 1);
  CHECK(seen.count("y") == 1);
  CHECK(max_rel_diff(observed, run_model(*m, x, false)) == 0.0);
  // keep_all_values: every intermediate stays, so nothing is fused either.
  backends::ExecOptions o;
  o.threads = 1;
  o.keep_all_values = true;
  backends::Executor ex(*m, o);
  CHECK(max_rel_diff(ex.run({{"x", backends::RValue::of(x)}}).at(0).tensor, observed) == 0.0);
}

TEST_CASE("Conv fusion: an activation whose input has another reader or is a graph output is not fused") {
  for (const char* tail : {"two_readers", "conv_output"}) {
    CAPTURE(tail);
    auto m = conv_model(kShapes[2], tail, 5);
    CHECK_FALSE(backends::cpu::fuse_conv(node_named(*m, "conv")).has_value());
    const Tensor x = tensor<float>({1, 8, 9, 11}, random_values(8 * 99, 6));
    CHECK(max_rel_diff(run_model(*m, x, true), run_model(*m, x, false)) == 0.0);
  }
  // A BatchNormalization with non-constant statistics is not folded (only the conv runs alone).
  auto m = conv_model(kShapes[0], "bn", 7);
  ir::Graph& g = *m->graph;
  ir::Value& mu = g.add_value("mu_in");
  mu.dtype = ir::DType::F32;
  mu.is_graph_input = true;
  g.inputs.push_back(&mu);
  ir::Node* bn = g.outputs[0]->producer;
  g.set_input(*bn, 3, &mu);
  CHECK_FALSE(backends::cpu::fuse_conv(node_named(*m, "conv")).has_value());
}

TEST_CASE("Conv fusion: a bad input dtype still fails as a model error") {
  auto m = conv_model(kShapes[0], "relu", 8);
  backends::ExecOptions o;
  o.threads = 1;
  backends::Executor ex(*m, o);
  const Tensor x = tensor<double>({1, 3, 9, 11}, std::vector<double>(3 * 99, 1.0));
  CHECK_THROWS_AS(ex.run({{"x", backends::RValue::of(x)}}), ModelError);
}

TEST_CASE("Conv: depthwise strides, dilations and asymmetric pads match a direct loop") {
  struct Case {
    int64_t C, H, W, K, s, d, pb, pe;
  };
  const Case cases[] = {{4, 13, 11, 3, 2, 1, 1, 0}, {4, 12, 12, 3, 2, 1, 0, 1}, {3, 10, 9, 5, 3, 1, 2, 2},
                        {2, 11, 10, 3, 2, 2, 2, 1}, {5, 7, 7, 3, 1, 1, 1, 1},  {3, 9, 8, 2, 1, 2, 0, 1}};
  unsigned seed = 40;
  for (const Case& c : cases) {
    CAPTURE(c.K);
    CAPTURE(c.s);
    CAPTURE(c.d);
    const auto x = random_values(c.C * c.H * c.W, seed++);
    const auto w = random_values(c.C * c.K * c.K, seed++);
    const int64_t eff = (c.K - 1) * c.d + 1;
    const int64_t OH = (c.H + c.pb + c.pe - eff) / c.s + 1, OW = (c.W + c.pb + c.pe - eff) / c.s + 1;
    const Tensor y = OpTest("Conv", 11)
                         .in(tensor<float>({1, c.C, c.H, c.W}, x))
                         .in(tensor<float>({c.C, 1, c.K, c.K}, w))
                         .i("group", c.C)
                         .is("strides", {c.s, c.s})
                         .is("dilations", {c.d, c.d})
                         .is("pads", {c.pb, c.pb, c.pe, c.pe})
                         .run1();
    REQUIRE(y.dims() == std::vector<int64_t>{1, c.C, OH, OW});
    auto yd = y.data<float>();
    double md = 0;
    for (int64_t ch = 0; ch < c.C; ++ch)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = 0;
          for (int64_t kh = 0; kh < c.K; ++kh)
            for (int64_t kw = 0; kw < c.K; ++kw) {
              const int64_t ih = oh * c.s - c.pb + kh * c.d, iw = ow * c.s - c.pb + kw * c.d;
              if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
              acc += static_cast<double>(x[static_cast<size_t>((ch * c.H + ih) * c.W + iw)]) *
                     w[static_cast<size_t>((ch * c.K + kh) * c.K + kw)];
            }
          md = std::max(md, std::abs(acc - yd[static_cast<size_t>((ch * OH + oh) * OW + ow)]));
        }
    CHECK(md < 1e-5);
  }
}
