// RewriteDriver: target-op filtering, fixpoint with a cap, subgraph recursion, error context
// naming the node, and per-rule counting; plus the surgery helpers rules share.
#include <doctest/doctest.h>

#include "support/graph_builder.h"
#include "transforms/common/rewrite.h"

using namespace mcc;

namespace {
const char* kChain = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (bool c, float[2] X) => (float[2] Y)
    {
      a = Neg(X)
      b = Neg(a)
      Y = If(c) <
        then_branch = t () => (float[2] yt) { yt = Neg(b) },
        else_branch = e () => (float[2] ye) { ye = Relu(b) }
      >
    })";

// Renames every Neg to Abs once (a rule that changes the graph without erasing).
bool neg_to_abs(ir::Graph&, ir::Node& n, transforms::RewriteLog& log) {
  n.op_type = "Abs";
  log.add("renamed", n.name.empty() ? n.outputs[0]->name : n.name);
  return true;
}
}  // namespace

TEST_CASE("RewriteDriver visits only target ops, recurses into subgraphs when asked, counts") {
  for (bool sub : {true, false}) {
    ir::Model m = test::parse_onnx_text(kChain);
    transforms::RewriteLog log;
    const int64_t n = transforms::RewriteDriver().on({"Neg"}, neg_to_abs).recurse_subgraphs(sub).run(*m.graph, log);
    CHECK(n == (sub ? 3 : 2));
    CHECK(log.get("renamed") == n);
    CHECK(log.stats()["renamed"] == n);
    CHECK(log.record()["renamed"].size() == static_cast<size_t>(n));
    CHECK(test::count_ops(m, "Relu") == 1);
    CHECK(test::count_ops(m, "Neg") == (sub ? 0 : 1));
  }
}

TEST_CASE("RewriteDriver stops at the sweep cap when a rule never settles") {
  ir::Model m = test::parse_onnx_text(kChain);
  transforms::RewriteLog log;
  int calls = 0;
  const int64_t n = transforms::RewriteDriver()
                        .on({"Neg"}, [&](ir::Graph&, ir::Node&, transforms::RewriteLog&) { ++calls; return true; })
                        .recurse_subgraphs(false)
                        .max_sweeps(4)
                        .run(*m.graph, log);
  CHECK(n == 8);  // 2 nodes x 4 sweeps
  CHECK(calls == 8);
}

TEST_CASE("RewriteDriver names the node in errors a rule throws") {
  ir::Model m = test::parse_onnx_text(kChain);
  transforms::RewriteLog log;
  auto driver = transforms::RewriteDriver().on({"Relu"}, [](ir::Graph&, ir::Node&, transforms::RewriteLog&) -> bool {
    throw ModelError("bad weights");
  });
  try {
    driver.run(*m.graph, log);
    FAIL("no error");
  } catch (const ModelError& e) {
    CHECK(std::string(e.what()).find("bad weights") != std::string::npos);
    CHECK(std::string(e.what()).find("(Relu-13)") != std::string::npos);
  }
}

TEST_CASE("replace_value moves uses, graph outputs and subgraph outputs that name the outer value") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (bool c, float[2] X) => (float[2] Y, float[2] a)
    {
      a = Neg(X)
      Y = If(c) <
        then_branch = t () => (float[2] a) { },
        else_branch = e () => (float[2] ye) { ye = Relu(a) }
      >
    })");
  ir::Graph& g = *m.graph;
  ir::Value* a = g.find_value("a");
  CHECK(transforms::is_any_graph_output(*a));
  CHECK_FALSE(transforms::has_single_use(*a));
  ir::Value& b = g.add_value("b");
  ir::Node& abs = g.add_node_with_outputs("Abs", "", "abs", {g.find_value("X")}, {&b}, g.nodes()[1]);
  abs.since_version = 13;
  b.dtype = ir::DType::F32;
  b.has_type = true;
  transforms::replace_value(*a, b);
  CHECK(a->uses.empty());
  CHECK_FALSE(transforms::is_any_graph_output(*a));
  CHECK(g.outputs[1] == &b);
  CHECK(g.nodes().back()->subgraphs()[0]->outputs[0] == &b);
  CHECK(b.uses.size() == 1);  // the Relu inside the else branch
}
