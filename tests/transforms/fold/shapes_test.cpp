// fold_shapes: Shape/Size/Gather-on-Shape become constants on static shapes (and the whole fold
// stage then folds the shape arithmetic); symbolic dims are left alone.
#include <doctest/doctest.h>

#include "transforms/fold/fold_test_util.h"

using namespace mcc;

namespace {
const char* kFlatten = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[%s,4,3,3] X) => (float[%s,36] Y)
    <int64[1] I0 = {0}, int64[1] M1 = {-1}>
    {
      p = MaxPool<kernel_shape = [1, 1]>(X)
      s = Shape(p)
      n = Gather<axis = 0>(s, I0)
      t = Concat<axis = 0>(n, M1)
      Y = Reshape(p, t)
    })";
std::string flatten_model(const char* batch) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, kFlatten, batch, batch);
  return buf;
}
}  // namespace

TEST_CASE("fold_shapes folds Shape on a static shape and fold folds the arithmetic after it") {
  ir::Model m = test::parse_onnx_text(flatten_model("2"));
  const auto feeds = test::random_feeds(m, 1);
  const auto before = test::run_cpu(m, feeds);
  transforms::RewriteLog log;
  CHECK(transforms::fold::fold_shapes(m, {}, log) >= 1);
  CHECK(test::count_ops(m, "Shape") == 0);
  auto r = test::run_fold(m);
  CHECK(r.modified);
  CHECK(test::count_ops(m, "Gather") == 0);
  CHECK(test::count_ops(m, "Concat") == 0);
  CHECK(m.graph->nodes().size() == 2);  // MaxPool, Reshape
  const ir::Value* t = m.graph->nodes()[1]->inputs[1];
  REQUIRE(t->initializer.has_value());
  CHECK(t->initializer->data<int64_t>()[0] == 2);
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) == 0);
  CHECK_FALSE(test::run_fold(m).modified);
}

TEST_CASE("fold_shapes leaves a symbolic batch alone but folds Gather of a static dim") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,4,3,3] X) => (int64[1] B, int64[1] C, int64 Z)
    <int64[1] I0 = {0}, int64[1] I1 = {1}>
    {
      s = Shape(X)
      B = Gather<axis = 0>(s, I0)
      C = Gather<axis = 0>(s, I1)
      Z = Size(X)
    })");
  transforms::RewriteLog log;
  CHECK(transforms::fold::fold_shapes(m, {}, log) == 1);
  CHECK(test::count_ops(m, "Shape") == 1);
  CHECK(test::count_ops(m, "Size") == 1);
  CHECK(test::count_ops(m, "Gather") == 1);
  const ir::Value* c = m.graph->outputs[1];
  CHECK(c->name == "C");
  REQUIRE(c->initializer.has_value());
  CHECK(c->initializer->data<int64_t>()[0] == 4);
  CHECK_NOTHROW(ir::verify(m));
}

TEST_CASE("fold_shapes: Shape with start/end and Size on static shapes") {
  ir::Model m = test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[2,5,7] X) => (int64[2] S, int64 Z)
    {
      S = Shape<start = 1>(X)
      Z = Size(X)
    })");
  CHECK(test::run_step(m, transforms::fold::fold_shapes) == 2);
  CHECK(m.graph->nodes().empty());
  CHECK(m.graph->outputs[0]->initializer->data<int64_t>()[1] == 7);
  CHECK(m.graph->outputs[1]->initializer->data<int64_t>()[0] == 70);
  CHECK_NOTHROW(ir::verify(m));
}
