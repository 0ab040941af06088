// Nodes whose inputs are all constants (initializers, Constant values, or such nodes' results, of
// their graph or of an enclosing one) are computed once when the executor plans the graph and do
// not run again, in If bodies too; an initializer that is also a graph input is not a constant (a
// feed may replace it); an observer or MCC_FUSE=0 runs every node as written.
#include <doctest/doctest.h>

#include "backends/executor.h"
#include "control_test_util.h"

using namespace mcc;
using namespace mcc::test;

namespace {

// y = x + Slice(w, [2], [4]) in the main graph; the If's then branch returns
// x * Concat(Slice(w, [0], [2]), Slice(w, [2], [4]))[1:3] (weights reordered as an LSTM export does).
struct AheadModel {
  ModelBuilder b{13};
  ir::Value* w = nullptr;
  ir::Node* main_slice = nullptr;
  ir::Node* body_concat = nullptr;
  std::vector<ir::Node*> body_slices;

  explicit AheadModel(bool w_is_input) {
    ir::Value* x = b.input("x", tensor<float>({2}, {1.f, 2.f}));
    ir::Value* cond = b.input("cond", bools({}, {1}));
    w = &b.g().add_initializer("w", tensor<float>({4}, {10.f, 20.f, 30.f, 40.f}));
    if (w_is_input) {
      w->is_graph_input = true;
      b.g().inputs.push_back(w);
    }
    auto i64 = [&](const char* name, std::vector<int64_t> v) {
      return &b.g().add_initializer(name, tensor<int64_t>({static_cast<int64_t>(v.size())}, v));
    };
    ir::Value *s0 = i64("s0", {0}), *s1 = i64("s1", {1}), *s2 = i64("s2", {2}), *s3 = i64("s3", {3}),
              *s4 = i64("s4", {4}), *ax = i64("ax", {0});
    ir::Value* hi = b.node("Slice", {w, s2, s4, ax}, {"hi"})[0];
    main_slice = hi->producer;
    b.output(b.node("Add", {x, hi}, {"y"})[0]);
    auto then_g = b.subgraph("then", {});
    ir::Value* lo_b = b.node(*then_g, "Slice", {w, s0, s2, ax}, {"lo_b"})[0];
    ir::Value* hi_b = b.node(*then_g, "Slice", {w, s2, s4, ax}, {"hi_b"})[0];
    body_slices = {lo_b->producer, hi_b->producer};
    ir::Value* cat = b.node(*then_g, "Concat", {hi_b, lo_b}, {"cat"}, {attr_i("axis", 0)})[0];
    body_concat = cat->producer;
    ir::Value* mid = b.node(*then_g, "Slice", {cat, s1, s3, ax}, {"mid"})[0];
    then_g->outputs.push_back(b.node(*then_g, "Mul", {x, mid}, {"prod"})[0]);
    auto else_g = b.subgraph("else", {});
    else_g->outputs.push_back(x);
    b.output(b.node("If", {cond}, {"z"}, {attr_g("then_branch", then_g), attr_g("else_branch", else_g)})[0]);
  }
};

bool ran(const backends::Executor& ex, const ir::Node* n) {
  for (const auto& t : ex.node_times())
    if (t.node == n) return true;
  return false;
}

}  // namespace

TEST_CASE("Executor: nodes of constants are computed at plan time, in If bodies from outer constants") {
  for (bool observe : {false, true}) {
    CAPTURE(observe);
    AheadModel m(false);
    backends::ExecOptions o;
    o.profile = true;
    o.threads = 1;
    backends::Executor ex(m.b.model, o);
    if (observe) ex.set_observer([](const ir::Node&, const ir::Value&, const backends::RValue&) {});
    for (int run = 0; run < 2; ++run) {
      const auto out = ex.run(m.b.feeds);
      REQUIRE(out.size() == 2);
      CHECK(values(out[0].tensor) == std::vector<double>{31, 42});
      CHECK(values(out[1].tensor) == std::vector<double>{40, 20});  // [30 40 10 20][1:3] = [40 10]
    }
    CHECK(ran(ex, m.main_slice) == observe);
    CHECK(ran(ex, m.body_concat) == observe);
    for (const ir::Node* s : m.body_slices) CHECK(ran(ex, s) == observe);
  }
}

TEST_CASE("Executor: an initializer that is also a graph input is not computed ahead") {
  AheadModel m(true);
  backends::ExecOptions o;
  o.profile = true;
  o.threads = 1;
  backends::Executor ex(m.b.model, o);
  auto feeds = m.b.feeds;
  CHECK(values(ex.run(feeds)[0].tensor) == std::vector<double>{31, 42});  // w from its initializer
  feeds.emplace_back("w", backends::RValue::of(tensor<float>({4}, {0.f, 0.f, 5.f, 6.f})));
  const auto out = ex.run(feeds);
  CHECK(values(out[0].tensor) == std::vector<double>{6, 8});
  CHECK(values(out[1].tensor) == std::vector<double>{6, 0});  // [5 6 0 0][1:3] = [6 0]
  CHECK(ran(ex, m.main_slice));
  CHECK(ran(ex, m.body_concat));
}

TEST_CASE("Executor: with fusion off every node runs as written") {
  AheadModel m(false);
  backends::ExecOptions o;
  o.profile = true;
  o.threads = 1;
  o.fuse = false;
  backends::Executor ex(m.b.model, o);
  const auto out = ex.run(m.b.feeds);
  CHECK(values(out[0].tensor) == std::vector<double>{31, 42});
  CHECK(values(out[1].tensor) == std::vector<double>{40, 20});
  CHECK(ran(ex, m.main_slice));
  CHECK(ran(ex, m.body_concat));
}
