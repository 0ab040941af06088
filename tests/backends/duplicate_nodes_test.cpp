// Plan-time common-subexpression detection: a node that repeats an earlier one (same op,
// attributes and inputs) is not run again and takes the earlier outputs, which stay alive until
// the repeat even when their last reader came before it; different attributes or inputs, and
// random ops, still run.
#include <doctest/doctest.h>

#include "backends/duplicate_nodes.h"
#include "backends/executor.h"
#include "support/graph_builder.h"

using namespace mcc;
using namespace mcc::test;

TEST_CASE("Executor: a node that repeats an earlier one takes its outputs instead of running") {
  ir::Model model = empty_model(13);
  ir::Graph& g = *model.graph;
  ir::Value& x = add_input(g, "x", {2, 3});
  // t1's only reader (Relu) comes before the repeat t2: t1 must outlive its last reader.
  ir::Node& t1 = add_node(g, "Transpose", "t1", {&x}, {"a"}, 13, {attr_ints("perm", {1, 0})});
  ir::Node& r = add_node(g, "Relu", "r", {t1.outputs[0]}, {"ra"}, 13);
  ir::Node& t2 = add_node(g, "Transpose", "t2", {&x}, {"b"}, 13, {attr_ints("perm", {1, 0})});
  ir::Node& t3 = add_node(g, "Transpose", "t3", {t2.outputs[0]}, {"c"}, 13, {attr_ints("perm", {1, 0})});
  ir::Node& s = add_node(g, "Add", "s", {r.outputs[0], t2.outputs[0]}, {"y"}, 13);
  mark_output(g, *s.outputs[0]);
  mark_output(g, *t3.outputs[0]);

  CHECK(backends::duplicate_key(t1) == backends::duplicate_key(t2));
  CHECK(backends::duplicate_key(t1) != backends::duplicate_key(t3));  // other input
  ir::Node& other_perm = add_node(g, "Transpose", "t4", {&x}, {"d"}, 13, {attr_ints("perm", {0, 1})});
  CHECK(backends::duplicate_key(t1) != backends::duplicate_key(other_perm));
  ir::Node& rnd = add_node(g, "RandomNormalLike", "rn", {&x}, {"e"}, 13);
  CHECK(backends::duplicate_key(rnd).empty());

  backends::ExecOptions o;
  o.profile = true;
  backends::Executor ex(model, o);
  const auto xv = backends::RValue::of(ir::Tensor::from_vector<float>({2, 3}, {1.f, -2.f, 3.f, -4.f, 5.f, -6.f}));
  for (int run = 0; run < 2; ++run) {
    const auto outs = ex.run({{"x", xv}});
    auto y = outs.at(0).tensor.data<float>();
    // y = relu(x^T) + x^T; x^T = [1 -4; -2 5; 3 -6]
    const float want[] = {2.f, -4.f, -2.f, 10.f, 6.f, -6.f};
    for (int i = 0; i < 6; ++i) CHECK(y[i] == want[i]);
    CHECK(outs.at(1).tensor.data<float>()[1] == -2.f);  // (x^T)^T = x
  }
  bool t2_ran = false, t1_ran = false;
  for (const auto& nt : ex.node_times()) {
    t1_ran = t1_ran || nt.node == &t1;
    t2_ran = t2_ran || nt.node == &t2;
  }
  CHECK(t1_ran);
  CHECK_FALSE(t2_ran);

  backends::ExecOptions unfused;
  unfused.profile = true;
  unfused.fuse = false;  // plain execution runs every node
  backends::Executor ex2(model, unfused);
  ex2.run({{"x", xv}});
  bool ran = false;
  for (const auto& nt : ex2.node_times()) ran = ran || nt.node == &t2;
  CHECK(ran);
}
