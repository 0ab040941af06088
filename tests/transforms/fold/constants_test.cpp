// fold_constants: constant subgraphs evaluated with the cpu kernels, Constant nodes become
// initializers; random ops, graph-input initializers, oversize results and shared weights stay.
#include <doctest/doctest.h>

#include "transforms/fold/fold_test_util.h"

using namespace mcc;

namespace {
// Y = X + Transpose(Mul(W, Constant(2)))  with W[4,3], X[3,4].
ir::Model const_chain() {
  return test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3,4] X) => (float[3,4] Y)
    <float[4,3] W = {1,2,3,4,5,6,7,8,9,10,11,12}>
    {
      two = Constant<value = float {2.0}>()
      wm = Mul(W, two)
      wt = Transpose<perm = [1, 0]>(wm)
      Y = Add(X, wt)
    })");
}
}  // namespace

TEST_CASE("fold_constants evaluates a constant chain with the cpu kernels") {
  ir::Model m = const_chain();
  const auto feeds = test::random_feeds(m, 1);
  const auto before = test::run_cpu(m, feeds);
  transforms::RewriteLog log;
  transforms::fold::FoldConfig cfg;
  CHECK(transforms::fold::fold_constants(m, cfg, log) == 3);
  CHECK(log.get("constant_nodes_to_initializers") == 1);
  CHECK(log.get("constants_folded") == 2);
  CHECK(m.graph->nodes().size() == 1);
  CHECK(m.graph->nodes()[0]->op_type == "Add");
  const ir::Value* wt = m.graph->find_value("wt");  // the folded value keeps its name
  REQUIRE(wt != nullptr);
  REQUIRE(wt->initializer.has_value());
  CHECK(wt->initializer->dims() == std::vector<int64_t>{3, 4});
  CHECK(wt->initializer->data<float>()[1] == 8.f);  // W[1][0] * 2
  CHECK(m.graph->find_value("W") == nullptr);       // the source initializer went with its only use
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) == 0);
  CHECK(test::run_step(m, transforms::fold::fold_constants) == 0);
}

TEST_CASE("fold_constants leaves random ops alone") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] X) => (float[2,3] Y)
    {
      r = RandomNormal<shape = [2, 3], seed = 1.0>()
      rl = RandomUniformLike<seed = 2.0>(r)
      Y = Add(X, rl)
    })");
  CHECK(test::run_step(m, transforms::fold::fold_constants) == 0);
  CHECK(test::count_ops(m, "RandomNormal") == 1);
  CHECK(test::count_ops(m, "RandomUniformLike") == 1);
}

TEST_CASE("fold_constants does not fold through a graph input that has an initializer") {
  ir::Model m = const_chain();
  ir::Value* w = m.graph->find_value("W");
  w->is_graph_input = true;
  w->has_type = true;
  m.graph->inputs.push_back(w);
  CHECK(test::run_step(m, transforms::fold::fold_constants) == 1);  // only the Constant node
  CHECK(test::count_ops(m, "Mul") == 1);
  CHECK(test::count_ops(m, "Transpose") == 1);
  CHECK(test::count_ops(m, "Constant") == 0);
}

TEST_CASE("fold_constants respects the size budget") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] X) => (float[1000,1000] Y)
    <int64[2] S = {1000, 1000}>
    {
      big = ConstantOfShape<value = float[1] {1.0}>(S)
      Y = Add(big, X)
    })");
  transforms::RewriteLog log;
  transforms::fold::FoldConfig cfg;
  cfg.constant_size_limit = 1 << 20;  // 1 MiB < 4 MB result
  CHECK(transforms::fold::fold_constants(m, cfg, log) == 0);
  CHECK(test::count_ops(m, "ConstantOfShape") == 1);
  CHECK(log.get("constants_not_folded") == 1);
  cfg.constant_size_limit = 8 << 20;
  CHECK(transforms::fold::fold_constants(m, cfg, log) == 1);
  CHECK(test::count_ops(m, "ConstantOfShape") == 0);
  CHECK(m.graph->find_value("big")->initializer->nbytes() == 4000000);
}

TEST_CASE("fold_constants does not duplicate a shared large initializer") {
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "X", {64, 64});
  ir::Value& w = test::add_random_init(g, "W", {64, 64}, 1);  // 16 KiB, used twice
  test::add_node(g, "Transpose", "t", {&w}, {"wt"}, 13);
  ir::Node& a = test::add_node(g, "MatMul", "mm1", {&x, g.find_value("wt")}, {"y1"}, 13);
  ir::Node& b = test::add_node(g, "MatMul", "mm2", {&x, &w}, {"y2"}, 13);
  test::mark_output(g, *a.outputs[0]);
  test::mark_output(g, *b.outputs[0]);
  transforms::RewriteLog log;
  CHECK(transforms::fold::fold_constants(m, {}, log) == 0);
  CHECK(test::count_ops(m, "Transpose") == 1);
  CHECK(log.record()["constants_not_folded"][0].get<std::string>().find("shared") != std::string::npos);
}

TEST_CASE("fold_constants folds inside If branches from outer constants") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (bool c, float[2] X) => (float[2] Y)
    <float[2] A = {1.0, 2.0}>
    {
      Y = If(c) <
        then_branch = t () => (float[2] yt) { n = Neg(A)  yt = Add(X, n) },
        else_branch = e () => (float[2] ye) { ye = Sub(X, A) }
      >
    })");
  std::vector<std::pair<std::string, backends::RValue>> feeds{
      {"c", backends::RValue::of(test::bool_scalar(true))},
      {"X", backends::RValue::of(test::random_tensor({2}, 3))}};
  const auto before = test::run_cpu(m, feeds);
  CHECK(test::run_step(m, transforms::fold::fold_constants) == 1);
  CHECK(test::count_ops(m, "Neg") == 0);
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) == 0);
  transforms::fold::FoldConfig no_sub;
  no_sub.subgraphs = false;
  CHECK(test::run_step(m, transforms::fold::fold_constants, no_sub) == 0);
}
