// eliminate_identity: Identity, inference Dropout, no-op Cast/Reshape removed; graph output names
// kept; training Dropout and a used mask stay.
#include <doctest/doctest.h>

#include "transforms/fold/fold_test_util.h"

using namespace mcc;

TEST_CASE("eliminate_identity removes Identity, Dropout, no-op Cast and Reshape, keeping output names") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] X) => (float[2,3] Y)
    <int64[2] S = {2, 3}>
    {
      a = Identity(X)
      b = Dropout(a)
      c = Cast<to = 1>(b)
      d = Relu(c)
      e = Reshape(d, S)
      Y = Identity(e)
    })");
  const auto feeds = test::random_feeds(m, 1);
  const auto before = test::run_cpu(m, feeds);
  transforms::RewriteLog log;
  CHECK(transforms::fold::eliminate_identity(m, {}, log) == 5);
  CHECK(log.get("identities_removed") == 5);
  CHECK(m.graph->nodes().size() == 1);
  CHECK(m.graph->nodes()[0]->op_type == "Relu");
  CHECK(m.graph->outputs[0]->name == "Y");
  CHECK(m.graph->nodes()[0]->inputs[0]->name == "X");
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) == 0);
  CHECK(test::run_step(m, transforms::fold::eliminate_identity) == 0);
}

TEST_CASE("eliminate_identity keeps an Identity that connects a graph input to a graph output") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] X) => (float[2] Y)
    { Y = Identity(X) })");
  CHECK(test::run_step(m, transforms::fold::eliminate_identity) == 0);
  CHECK(m.graph->nodes().size() == 1);
  CHECK(m.graph->inputs[0]->name == "X");
  CHECK(m.graph->outputs[0]->name == "Y");
}

TEST_CASE("eliminate_identity keeps training Dropout, a used mask and a real Cast") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] X) => (float[2,3] Y, bool[2,3] M, double[2,3] Z)
    <bool T = {1}>
    {
      a = Dropout(X, , T)
      Y, M = Dropout(a)
      Z = Cast<to = 11>(X)
    })");
  CHECK(test::run_step(m, transforms::fold::eliminate_identity) == 0);
  CHECK(test::count_ops(m, "Dropout") == 2);
  CHECK(test::count_ops(m, "Cast") == 1);
}
