// Executor initializers: looked up from the plan (not copied into each run's scope); a feed for a
// graph input backed by an initializer overrides it, omitting the feed uses the initializer, and
// runs after an override see the initializer again. Constant nodes are evaluated at plan time.
#include <doctest/doctest.h>

#include "backends/executor.h"
#include "support/graph_builder.h"

using namespace mcc;
using namespace mcc::test;

TEST_CASE("Executor: initializer inputs default, feeds override them, later runs see the default") {
  ir::Model model = empty_model(13);
  ir::Model* m = &model;
  ir::Graph& g = *m->graph;
  ir::Value& x = add_input(g, "x", {2});
  ir::Value& w = g.add_initializer("w", ir::Tensor::from_vector<float>({2}, {10.f, 20.f}));
  w.is_graph_input = true;
  g.inputs.push_back(&w);
  ir::Value& k = g.add_initializer("k", ir::Tensor::from_vector<float>({2}, {1.f, 2.f}));  // initializer only
  ir::Node& a = add_node(g, "Add", "a", {&x, &w}, {"s"}, 13);
  ir::Node& b = add_node(g, "Mul", "b", {a.outputs[0], &k}, {"y"}, 13);
  mark_output(g, *b.outputs[0]);

  backends::Executor ex(*m, {});
  const auto xv = backends::RValue::of(ir::Tensor::from_vector<float>({2}, {1.f, 1.f}));
  const ir::Tensor t1 = ex.run({{"x", xv}}).at(0).tensor;
  auto y = t1.data<float>();
  CHECK(y[0] == 11.f);
  CHECK(y[1] == 42.f);
  const ir::Tensor t2 = ex.run({{"x", xv}, {"w", backends::RValue::of(ir::Tensor::from_vector<float>({2}, {0.f, 0.f}))}}).at(0).tensor;
  auto y2 = t2.data<float>();
  CHECK(y2[0] == 1.f);
  CHECK(y2[1] == 2.f);
  const ir::Tensor t3 = ex.run({{"x", xv}}).at(0).tensor;
  auto y3 = t3.data<float>();
  CHECK(y3[0] == 11.f);
  CHECK(y3[1] == 42.f);
}

TEST_CASE("Executor: Constant nodes are evaluated once at plan time; their values read as initializers") {
  ir::Model model = empty_model(13);
  ir::Graph& g = *model.graph;
  ir::Value& x = add_input(g, "x", {2});
  ir::Node& c = g.add_node("Constant", "", "c", {}, {"c"});
  c.since_version = 13;
  c.set_attr({"value", ir::AttrKind::Tensor, ir::Tensor::from_vector<float>({2}, {3.f, 4.f}), "", "", ""});
  ir::Node& a = add_node(g, "Add", "a", {&x, c.outputs[0]}, {"s"}, 13);
  ir::Node& b = add_node(g, "Mul", "b", {a.outputs[0], c.outputs[0]}, {"y"}, 13);
  mark_output(g, *b.outputs[0]);
  mark_output(g, *c.outputs[0]);  // a Constant's value as a graph output
  const auto xv = backends::RValue::of(ir::Tensor::from_vector<float>({2}, {1.f, 2.f}));
  for (bool observe : {false, true}) {
    CAPTURE(observe);
    backends::ExecOptions o;
    o.profile = true;
    backends::Executor ex(model, o);
    bool observed = false;  // an observer sees every node's outputs, the Constant's included
    if (observe) ex.set_observer([&](const ir::Node& n, const ir::Value&, const backends::RValue&) { observed = observed || &n == &c; });
    for (int run = 0; run < 2; ++run) {
      const auto out = ex.run({{"x", xv}});
      REQUIRE(out.size() == 2);
      CHECK(out[0].tensor.data<float>()[0] == 12.f);
      CHECK(out[0].tensor.data<float>()[1] == 24.f);
      CHECK(out[1].tensor.data<float>()[1] == 4.f);
    }
    bool constant_ran = false;
    for (const auto& t : ex.node_times()) constant_ran = constant_ran || t.node == &c;
    CHECK(constant_ran == observe);
    CHECK(observed == observe);
  }
}
