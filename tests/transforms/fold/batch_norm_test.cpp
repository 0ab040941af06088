// fold_batch_norm: fires on Conv/ConvTranspose/Gemm/MatMul + BN, keeps numerics and names, is
// idempotent, and leaves BN alone when folding would be wrong.
#include <doctest/doctest.h>

#include "transforms/fold/fold_test_util.h"

using namespace mcc;
using mcc::test::add_input;
using mcc::test::add_node;
using mcc::test::add_random_init;
using mcc::test::attr_i;

namespace {

// X[1,4,6,6] -> producer -> BN -> Y (graph output). Producer: Conv W[6,4/g,3,3] or
// ConvTranspose W[4,6/g,3,3]; 6 output channels either way.
ir::Model conv_bn(const std::string& producer, int64_t group = 1, bool bias = true, int opset = 13) {
  ir::Model m = test::empty_model(opset);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "X", {1, 4, 6, 6});
  ir::Value& w = producer == "Conv" ? add_random_init(g, "W", {6, 4 / group, 3, 3}, 1)
                                    : add_random_init(g, "W", {4, 6 / group, 3, 3}, 1);
  std::vector<ir::Value*> ins{&x, &w};
  if (bias) ins.push_back(&add_random_init(g, "B", {6}, 2));
  ir::Node& c = add_node(g, producer, "conv", ins, {"conv_out"}, opset,
                         {attr_i("group", group), test::attr_ints("pads", {1, 1, 1, 1})});
  (void)c;
  ir::Value& s = add_random_init(g, "s", {6}, 3, 0.5f, 1.5f);
  ir::Value& b = add_random_init(g, "b", {6}, 4);
  ir::Value& mean = add_random_init(g, "m", {6}, 5);
  ir::Value& var = add_random_init(g, "v", {6}, 6, 0.2f, 2.f);
  ir::Node& bn = add_node(g, "BatchNormalization", "bn", {g.find_value("conv_out"), &s, &b, &mean, &var}, {"Y"}, opset,
                          {test::attr_f("epsilon", 1e-3f)});
  test::mark_output(g, *bn.outputs[0]);
  return m;
}

void check_folds(ir::Model m, const std::string& producer) {
  const auto feeds = test::random_feeds(m, 7);
  const auto before = test::run_cpu(m, feeds);
  CHECK(test::run_step(m, transforms::fold::fold_batch_norm) == 1);               // 1. it fired
  CHECK(test::count_ops(m, "BatchNormalization") == 0);                     // 2. structure
  CHECK(test::count_ops(m, producer) == 1);
  CHECK(m.graph->outputs[0]->name == "Y");                                  //    interface kept
  CHECK(m.graph->outputs[0]->producer->op_type == (producer == "MatMul" ? "Add" : producer));
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) < 1e-4);       // 3. numerics
  CHECK(test::run_step(m, transforms::fold::fold_batch_norm) == 0);               // 4. idempotent
}

}  // namespace

TEST_CASE("fold_batch_norm folds Conv+BN and preserves numerics") { check_folds(conv_bn("Conv"), "Conv"); }

TEST_CASE("fold_batch_norm folds grouped Conv+BN without a bias") { check_folds(conv_bn("Conv", 2, false), "Conv"); }

TEST_CASE("fold_batch_norm folds ConvTranspose+BN (channel axis 1 x group)") {
  check_folds(conv_bn("ConvTranspose", 1), "ConvTranspose");
  check_folds(conv_bn("ConvTranspose", 2), "ConvTranspose");
}

TEST_CASE("fold_batch_norm folds Gemm+BN with transB and a bias, and MatMul+BN") {
  for (int trans_b : {0, 1}) {
    ir::Model m = test::empty_model(13);
    ir::Graph& g = *m.graph;
    ir::Value& a = add_input(g, "A", {3, 5});
    ir::Value& w = trans_b ? add_random_init(g, "W", {4, 5}, 1) : add_random_init(g, "W", {5, 4}, 1);
    ir::Value& c = add_random_init(g, "C", {4}, 2);
    add_node(g, "Gemm", "gemm", {&a, &w, &c}, {"h"}, 13, {attr_i("transB", trans_b), test::attr_f("beta", 0.5f)});
    ir::Node& bn = add_node(g, "BatchNormalization", "bn",
                            {g.find_value("h"), &add_random_init(g, "s", {4}, 3), &add_random_init(g, "b", {4}, 4),
                             &add_random_init(g, "m", {4}, 5), &add_random_init(g, "v", {4}, 6, 0.2f, 2.f)},
                            {"Y"}, 13);
    test::mark_output(g, *bn.outputs[0]);
    check_folds(std::move(m), "Gemm");
  }
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& a = add_input(g, "A", {3, 5});
  add_node(g, "MatMul", "mm", {&a, &add_random_init(g, "W", {5, 4}, 1)}, {"h"}, 13);
  ir::Node& bn = add_node(g, "BatchNormalization", "bn",
                          {g.find_value("h"), &add_random_init(g, "s", {4}, 3), &add_random_init(g, "b", {4}, 4),
                           &add_random_init(g, "m", {4}, 5), &add_random_init(g, "v", {4}, 6, 0.2f, 2.f)},
                          {"Y"}, 13);
  test::mark_output(g, *bn.outputs[0]);
  check_folds(std::move(m), "MatMul");
}

TEST_CASE("fold_batch_norm leaves BN alone when the Conv output has another consumer") {
  ir::Model m = conv_bn("Conv");
  ir::Graph& g = *m.graph;
  ir::Node& r = add_node(g, "Relu", "relu", {g.find_value("conv_out")}, {"Z"}, 13);
  test::mark_output(g, *r.outputs[0]);
  const auto feeds = test::random_feeds(m, 7);
  const auto before = test::run_cpu(m, feeds);
  CHECK(test::run_step(m, transforms::fold::fold_batch_norm) == 0);
  CHECK(test::count_ops(m, "BatchNormalization") == 1);
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) == 0);
}

TEST_CASE("fold_batch_norm: training_mode=1 is not folded") {
  ir::Model m = conv_bn("Conv", 1, true, 15);
  m.graph->nodes().back()->set_attr(attr_i("training_mode", 1));
  CHECK(test::run_step(m, transforms::fold::fold_batch_norm) == 0);
  CHECK(test::count_ops(m, "BatchNormalization") == 1);
  CHECK(test::count_ops(m, "Conv") == 1);
}

TEST_CASE("fold_batch_norm: non-constant weights are not folded") {
  ir::Model m = conv_bn("Conv");
  ir::Value* w = m.graph->find_value("W");
  w->is_graph_input = true;  // an initializer that is also a graph input may be fed at run time
  m.graph->inputs.push_back(w);
  CHECK(test::run_step(m, transforms::fold::fold_batch_norm) == 0);
  CHECK(test::count_ops(m, "BatchNormalization") == 1);
  CHECK(m.graph->find_value("W")->uses.size() == 1);
}

TEST_CASE("fold_batch_norm folds inside an If branch iff subgraphs are enabled") {
  for (bool sub : {true, false}) {
    ir::Model m = test::empty_model(13);
    ir::Graph& g = *m.graph;
    ir::Value& x = add_input(g, "X", {1, 4, 5, 5});
    ir::Value& cond = add_input(g, "cond", {}, ir::DType::Bool);
    auto then_g = std::make_shared<ir::Graph>(&g);
    then_g->name = "then";
    ir::Graph& t = *then_g;
    add_node(t, "Conv", "conv_t", {&x, &add_random_init(t, "Wt", {3, 4, 1, 1}, 1)}, {"ct"}, 13);
    ir::Node& bn = add_node(t, "BatchNormalization", "bn_t",
                            {t.find_value("ct"), &add_random_init(t, "s", {3}, 3), &add_random_init(t, "b", {3}, 4),
                             &add_random_init(t, "m", {3}, 5), &add_random_init(t, "v", {3}, 6, 0.2f, 2.f)},
                            {"yt"}, 13);
    test::mark_output(t, *bn.outputs[0]);
    auto else_g = std::make_shared<ir::Graph>(&g);
    else_g->name = "else";
    ir::Node& ce = add_node(*else_g, "Conv", "conv_e", {&x, &add_random_init(*else_g, "We", {3, 4, 1, 1}, 2)}, {"ye"}, 13);
    test::mark_output(*else_g, *ce.outputs[0]);
    ir::Node& iff = add_node(g, "If", "if", {&cond}, {"Y"}, 13,
                             {ir::Attribute{"then_branch", ir::AttrKind::Graph, then_g, "", "", ""},
                              ir::Attribute{"else_branch", ir::AttrKind::Graph, else_g, "", "", ""}});
    test::mark_output(g, *iff.outputs[0]);
    auto feeds = test::random_feeds(m, 3);
    feeds[1].second = backends::RValue::of(test::bool_scalar(true));
    const auto before = test::run_cpu(m, feeds);
    transforms::fold::FoldConfig cfg;
    cfg.subgraphs = sub;
    CHECK(test::run_step(m, transforms::fold::fold_batch_norm, cfg) == (sub ? 1 : 0));
    CHECK(test::count_ops(m, "BatchNormalization") == (sub ? 0 : 1));
    CHECK(then_g->outputs[0]->name == "yt");
    CHECK_NOTHROW(ir::verify(m));
    CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) < 1e-4);
  }
}
