// fold_mul_add: per-channel Mul/Div/Add/Sub after Conv/Gemm go into the weights; anything that is
// not per-channel, or c - x, stays.
#include <doctest/doctest.h>

#include "transforms/fold/fold_test_util.h"

using namespace mcc;

namespace {
// X[1,3,5,5] -> Conv(W[4,3,3,3], B) -> op1(c1) -> op2(c2) -> Y
ir::Model conv_then(const std::string& op1, std::vector<int64_t> c1, const std::string& op2, std::vector<int64_t> c2,
                    bool const_first = false) {
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "X", {1, 3, 5, 5});
  test::add_node(g, "Conv", "conv", {&x, &test::add_random_init(g, "W", {4, 3, 3, 3}, 1), &test::add_random_init(g, "B", {4}, 2)},
                 {"h"}, 13);
  ir::Value& k1 = test::add_random_init(g, "c1", c1, 3, 0.5f, 2.f);
  std::vector<ir::Value*> in1{g.find_value("h"), &k1};
  if (const_first) std::swap(in1[0], in1[1]);
  test::add_node(g, op1, "op1", in1, {"h1"}, 13);
  ir::Node& last = test::add_node(g, op2, "op2", {g.find_value("h1"), &test::add_random_init(g, "c2", c2, 4)}, {"Y"}, 13);
  test::mark_output(g, *last.outputs[0]);
  return m;
}
}  // namespace

TEST_CASE("fold_mul_add folds per-channel Mul then Add into the Conv") {
  for (auto [op1, op2] : {std::pair{"Mul", "Add"}, std::pair{"Div", "Sub"}}) {
    CAPTURE(op1);
    ir::Model m = conv_then(op1, {4, 1, 1}, op2, {1, 4, 1, 1});
    const auto feeds = test::random_feeds(m, 1);
    const auto before = test::run_cpu(m, feeds);
    transforms::RewriteLog log;
    CHECK(transforms::fold::fold_mul_add(m, {}, log) == 2);
    CHECK(log.get("mul_add_folded") == 2);
    CHECK(m.graph->nodes().size() == 1);
    CHECK(m.graph->nodes()[0]->op_type == "Conv");
    CHECK(m.graph->outputs[0]->name == "Y");
    CHECK_NOTHROW(ir::verify(m));
    CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) < 1e-4);
    CHECK(test::run_step(m, transforms::fold::fold_mul_add) == 0);
  }
}

TEST_CASE("fold_mul_add folds a scalar Mul and a per-feature Add into Gemm") {
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& a = test::add_input(g, "A", {2, 5});
  test::add_node(g, "Gemm", "gemm", {&a, &test::add_random_init(g, "W", {3, 5}, 1)}, {"h"}, 13, {test::attr_i("transB", 1)});
  test::add_node(g, "Mul", "mul", {&test::add_random_init(g, "k", {}, 2), g.find_value("h")}, {"h1"}, 13);
  ir::Node& add = test::add_node(g, "Add", "add", {g.find_value("h1"), &test::add_random_init(g, "d", {1, 3}, 3)}, {"Y"}, 13);
  test::mark_output(g, *add.outputs[0]);
  const auto feeds = test::random_feeds(m, 1);
  const auto before = test::run_cpu(m, feeds);
  CHECK(test::run_step(m, transforms::fold::fold_mul_add) == 2);
  CHECK(m.graph->nodes().size() == 1);
  CHECK(m.graph->nodes()[0]->num_inputs() == 3);
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) < 1e-5);
}

TEST_CASE("fold_mul_add leaves non-per-channel constants and c - x alone") {
  ir::Model spatial = conv_then("Mul", {1, 1, 3, 3}, "Add", {1, 5, 5});  // varies over H, W
  CHECK(test::run_step(spatial, transforms::fold::fold_mul_add) == 0);
  CHECK(spatial.graph->nodes().size() == 3);
  ir::Model last_axis = conv_then("Mul", {4}, "Add", {4});  // [4] broadcasts along W, not C
  CHECK(test::run_step(last_axis, transforms::fold::fold_mul_add) == 0);
  ir::Model rsub = conv_then("Sub", {4, 1, 1}, "Mul", {1}, /*const_first=*/true);
  const auto feeds = test::random_feeds(rsub, 1);
  const auto before = test::run_cpu(rsub, feeds);
  CHECK(test::run_step(rsub, transforms::fold::fold_mul_add) == 0);
  CHECK(test::count_ops(rsub, "Sub") == 1);
  CHECK(test::max_abs_diff(test::run_cpu(rsub, feeds), before) == 0);
}
