// eliminate_dead_code: dead nodes and unused initializers go, in subgraphs too; values captured by
// a subgraph or returned by one stay; graph inputs never go.
#include <doctest/doctest.h>

#include "transforms/fold/fold_test_util.h"

using namespace mcc;

TEST_CASE("eliminate_dead_code removes dead chains and unused initializers") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X, float[2] unused_in) => (float[2] Y)
    <float[2] A = {1.0, 2.0}, float[2] U = {3.0, 4.0}>
    {
      d1 = Mul(X, U)
      d2 = Sigmoid(d1)
      Y = Add(X, A)
    })");
  const auto feeds = test::random_feeds(m, 1);
  const auto before = test::run_cpu(m, feeds);
  transforms::RewriteLog log;
  CHECK(transforms::fold::eliminate_dead_code(m, {}, log) == 3);
  CHECK(log.get("dead_nodes_removed") == 2);
  CHECK(log.get("initializers_removed") == 1);
  CHECK(m.graph->nodes().size() == 1);
  CHECK(m.graph->find_value("U") == nullptr);
  CHECK(m.graph->inputs.size() == 2);  // the unused graph input stays
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) == 0);
  CHECK(test::run_step(m, transforms::fold::eliminate_dead_code) == 0);
}

TEST_CASE("eliminate_dead_code keeps an outer value used only inside an If body") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (bool c, float[2] X) => (float[2] Y)
    <float[2] A = {1.0, 2.0}>
    {
      inner_only = Relu(X)
      ret_only = Neg(X)
      Y = If(c) <
        then_branch = t () => (float[2] yt) { dead = Exp(inner_only)  yt = Add(inner_only, A) },
        else_branch = e () => (float[2] ret_only) { }
      >
    })");
  std::vector<std::pair<std::string, backends::RValue>> feeds{
      {"c", backends::RValue::of(test::bool_scalar(true))}, {"X", backends::RValue::of(test::random_tensor({2}, 3))}};
  const auto before = test::run_cpu(m, feeds);
  transforms::RewriteLog log;
  CHECK(transforms::fold::eliminate_dead_code(m, {}, log) == 1);  // only the dead Exp inside the branch
  CHECK(test::count_ops(m, "Exp") == 0);
  CHECK(test::count_ops(m, "Relu") == 1);                   // captured by the then branch
  CHECK(test::count_ops(m, "Neg") == 1);                    // returned by the else branch
  CHECK(m.graph->find_value("A") != nullptr);
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) == 0);
  feeds[0].second = backends::RValue::of(test::bool_scalar(false));
  CHECK(test::run_cpu(m, feeds)[0].data<float>()[0] == -feeds[1].second.tensor.data<float>()[0]);
}

TEST_CASE("eliminate_dead_code removes a dead If and the outer values only it captured") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (bool c, float[2] X) => (float[2] Y)
    <float[2] A = {1.0, 2.0}>
    {
      r = Relu(X)
      unused = If(c) <
        then_branch = t () => (float[2] yt) { yt = Add(r, A) },
        else_branch = e () => (float[2] ye) { ye = Neg(r) }
      >
      Y = Sigmoid(X)
    })");
  CHECK(test::run_step(m, transforms::fold::eliminate_dead_code) == 3);  // If, Relu, A
  CHECK(m.graph->nodes().size() == 1);
  CHECK(m.graph->find_value("A") == nullptr);
  CHECK(m.graph->find_value("X")->uses.size() == 1);
  CHECK_NOTHROW(ir::verify(m));
}
