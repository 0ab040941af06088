// prune{mode=channel}: on hand-built blocks (Conv-BN-Relu-Conv chain, residual Add, Concat with
// GlobalAveragePool-Flatten-Gemm, depthwise, Gemm/MatMul head) the channels that are zero already
// are the ones removed, every consumer shrinks with them, and the outputs stay the same on mcc's
// cpu backend and under ONNX Runtime; blocked groups are left alone and reported.
#include <doctest/doctest.h>

#include "transforms/prune/prune_test_util.h"

using namespace mcc;
using test::add_input;
using test::add_node;
using test::add_random_init;
using test::attr_i;
using test::attr_ints;

namespace {

constexpr int kOpset = 13;

struct Case {
  std::string name;
  ir::Model model;
  std::vector<std::pair<std::string, std::string>> opts;
};

ir::Value& v(ir::Graph& g, const std::string& name) { return *g.find_value(name); }

/// Y becomes the graph output with its static shape (ONNX's checker wants a shape there).
void output(ir::Graph& g, const std::vector<int64_t>& shape) {
  v(g, "Y").shape = ir::Shape::of(shape);
  test::mark_output(g, v(g, "Y"));
}

// X[1,4,6,6] -> conv1 (8) -> BN -> Relu -> conv2 (5) -> Y; channels 1, 4, 6 of conv1 are zero.
Case chain() {
  Case c{"chain", test::empty_model(kOpset), {{"mode", "channel"}, {"sparsity", "0.375"}}};
  ir::Graph& g = *c.model.graph;
  add_input(g, "X", {1, 4, 6, 6});
  add_random_init(g, "W1", {8, 4, 3, 3}, 1);
  add_random_init(g, "B1", {8}, 2);
  add_random_init(g, "s", {8}, 3, 0.5f, 1.5f);
  add_random_init(g, "b", {8}, 4);
  add_random_init(g, "m", {8}, 5);
  add_random_init(g, "var", {8}, 6, 0.2f, 2.f);
  add_random_init(g, "W2", {5, 8, 3, 3}, 7);
  add_random_init(g, "B2", {5}, 8);
  add_node(g, "Conv", "conv1", {&v(g, "X"), &v(g, "W1"), &v(g, "B1")}, {"c1"}, kOpset, {attr_ints("pads", {1, 1, 1, 1})});
  add_node(g, "BatchNormalization", "bn", {&v(g, "c1"), &v(g, "s"), &v(g, "b"), &v(g, "m"), &v(g, "var")}, {"n1"}, kOpset);
  add_node(g, "Relu", "relu", {&v(g, "n1")}, {"r1"}, kOpset);
  add_node(g, "Conv", "conv2", {&v(g, "r1"), &v(g, "W2"), &v(g, "B2")}, {"Y"}, kOpset, {attr_ints("pads", {1, 1, 1, 1})});
  output(g, {1, 5, 6, 6});
  for (const char* t : {"W1", "B1", "b", "m"}) test::zero_channels(g, t, 0, {1, 4, 6});
  return c;
}

// a = conv_a(X); b = conv_b(Relu(a)); Y = conv_c(Add(b, a)): conv_a and conv_b form one group.
Case residual() {
  Case c{"residual", test::empty_model(kOpset), {{"mode", "channel"}, {"sparsity", "0.25"}}};
  ir::Graph& g = *c.model.graph;
  add_input(g, "X", {1, 4, 6, 6});
  add_random_init(g, "Wa", {8, 4, 1, 1}, 1);
  add_random_init(g, "Ba", {8}, 2);
  add_random_init(g, "Wb", {8, 8, 3, 3}, 3);
  add_random_init(g, "Bb", {8}, 4);
  add_random_init(g, "Wc", {3, 8, 1, 1}, 5);
  add_node(g, "Conv", "conv_a", {&v(g, "X"), &v(g, "Wa"), &v(g, "Ba")}, {"a"}, kOpset);
  add_node(g, "Relu", "relu", {&v(g, "a")}, {"r"}, kOpset);
  add_node(g, "Conv", "conv_b", {&v(g, "r"), &v(g, "Wb"), &v(g, "Bb")}, {"b"}, kOpset, {attr_ints("pads", {1, 1, 1, 1})});
  add_node(g, "Add", "add", {&v(g, "b"), &v(g, "a")}, {"s"}, kOpset);
  add_node(g, "Conv", "conv_c", {&v(g, "s"), &v(g, "Wc")}, {"Y"}, kOpset);
  output(g, {1, 3, 6, 6});
  for (const char* t : {"Wa", "Ba", "Wb", "Bb"}) test::zero_channels(g, t, 0, {2, 5});
  return c;
}

// Concat(conv_a (6), conv_b (4)) -> Relu -> GlobalAveragePool -> Flatten -> Gemm fc (3) -> Y.
Case concat() {
  Case c{"concat", test::empty_model(kOpset), {{"mode", "channel"}, {"sparsity", "0.34"}}};
  ir::Graph& g = *c.model.graph;
  add_input(g, "X", {1, 4, 6, 6});
  add_random_init(g, "Wa", {6, 4, 1, 1}, 1);
  add_random_init(g, "Ba", {6}, 2);
  add_random_init(g, "Wb", {4, 4, 3, 3}, 3);
  add_random_init(g, "Bb", {4}, 4);
  add_random_init(g, "Wf", {3, 10}, 5);
  add_random_init(g, "Bf", {3}, 6);
  add_node(g, "Conv", "conv_a", {&v(g, "X"), &v(g, "Wa"), &v(g, "Ba")}, {"a"}, kOpset);
  add_node(g, "Conv", "conv_b", {&v(g, "X"), &v(g, "Wb"), &v(g, "Bb")}, {"b"}, kOpset, {attr_ints("pads", {1, 1, 1, 1})});
  add_node(g, "Concat", "cat", {&v(g, "a"), &v(g, "b")}, {"c"}, kOpset, {attr_i("axis", 1)});
  add_node(g, "Relu", "relu", {&v(g, "c")}, {"r"}, kOpset);
  add_node(g, "GlobalAveragePool", "gap", {&v(g, "r")}, {"p"}, kOpset);
  add_node(g, "Flatten", "flat", {&v(g, "p")}, {"f"}, kOpset, {attr_i("axis", 1)});
  add_node(g, "Gemm", "fc", {&v(g, "f"), &v(g, "Wf"), &v(g, "Bf")}, {"Y"}, kOpset, {attr_i("transB", 1)});
  output(g, {1, 3});
  for (const char* t : {"Wa", "Ba"}) test::zero_channels(g, t, 0, {0, 3});
  for (const char* t : {"Wb", "Bb"}) test::zero_channels(g, t, 0, {1});
  return c;
}

// expand (8) -> Relu -> depthwise 3x3 (group 8) -> Relu -> project (3) -> Y.
Case depthwise() {
  Case c{"depthwise", test::empty_model(kOpset), {{"mode", "channel"}, {"sparsity", "0.25"}}};
  ir::Graph& g = *c.model.graph;
  add_input(g, "X", {1, 4, 6, 6});
  add_random_init(g, "We", {8, 4, 1, 1}, 1);
  add_random_init(g, "Be", {8}, 2);
  add_random_init(g, "Wd", {8, 1, 3, 3}, 3);
  add_random_init(g, "Bd", {8}, 4);
  add_random_init(g, "Wp", {3, 8, 1, 1}, 5);
  add_node(g, "Conv", "expand", {&v(g, "X"), &v(g, "We"), &v(g, "Be")}, {"e"}, kOpset);
  add_node(g, "Relu", "relu1", {&v(g, "e")}, {"r1"}, kOpset);
  add_node(g, "Conv", "dw", {&v(g, "r1"), &v(g, "Wd"), &v(g, "Bd")}, {"d"}, kOpset,
           {attr_i("group", 8), attr_ints("pads", {1, 1, 1, 1})});
  add_node(g, "Relu", "relu2", {&v(g, "d")}, {"r2"}, kOpset);
  add_node(g, "Conv", "project", {&v(g, "r2"), &v(g, "Wp")}, {"Y"}, kOpset);
  output(g, {1, 3, 6, 6});
  for (const char* t : {"We", "Be", "Wd", "Bd"}) test::zero_channels(g, t, 0, {0, 7});
  return c;
}

// X[2,16] -> Gemm fc1 (12) -> Relu -> MatMul fc2 (7) -> Add bias -> Relu -> Gemm fc3 (5) -> Y.
Case gemm_head() {
  Case c{"gemm_head", test::empty_model(kOpset), {{"mode", "channel"}, {"sparsity", "0.25"}, {"overrides", "fc2:0.3"}}};
  ir::Graph& g = *c.model.graph;
  add_input(g, "X", {2, 16});
  add_random_init(g, "W1", {12, 16}, 1);
  add_random_init(g, "B1", {12}, 2);
  add_random_init(g, "W2", {12, 7}, 3);
  add_random_init(g, "B2", {7}, 4);
  add_random_init(g, "W3", {7, 5}, 5);
  add_node(g, "Gemm", "fc1", {&v(g, "X"), &v(g, "W1"), &v(g, "B1")}, {"h"}, kOpset, {attr_i("transB", 1)});
  add_node(g, "Relu", "relu1", {&v(g, "h")}, {"r1"}, kOpset);
  add_node(g, "MatMul", "fc2", {&v(g, "r1"), &v(g, "W2")}, {"m"}, kOpset);
  add_node(g, "Add", "bias2", {&v(g, "m"), &v(g, "B2")}, {"a"}, kOpset);
  add_node(g, "Relu", "relu2", {&v(g, "a")}, {"r2"}, kOpset);
  add_node(g, "Gemm", "fc3", {&v(g, "r2"), &v(g, "W3")}, {"Y"}, kOpset);
  output(g, {2, 5});
  for (const char* t : {"W1", "B1"}) test::zero_channels(g, t, 0, {3, 4, 9});
  test::zero_channels(g, "W2", 1, {1, 6});
  test::zero_channels(g, "B2", 0, {1, 6});
  return c;
}

std::vector<int64_t> dims(const ir::Model& m, const std::string& node, size_t input) {
  return test::dims_of(*m.graph, *test::node_named(*m.graph, node), input);
}

/// Prunes the case and checks the four things every structured case must show.
transforms::PassResult prune_and_check(Case& c) {
  const auto feeds = test::random_feeds(c.model, 3);
  const auto before = test::run_cpu(c.model, feeds);
  auto r = test::run_prune(c.model, c.opts);
  CHECK(r.modified);
  CHECK(r.stats["channels_removed"].get<int64_t>() > 0);
  CHECK(r.stats["params_after"].get<int64_t>() < r.stats["params_before"].get<int64_t>());
  CHECK(c.model.graph->outputs[0]->name == "Y");
  CHECK_NOTHROW(ir::verify(c.model));
  CHECK(test::max_abs_diff(test::run_cpu(c.model, feeds), before) <= 1e-5);
  return r;
}

}  // namespace

TEST_CASE("prune channel: Conv-BN-Relu-Conv chain drops the zero channels and shrinks BN and the next Conv") {
  Case c = chain();
  auto r = prune_and_check(c);
  CHECK(dims(c.model, "conv1", 1) == std::vector<int64_t>{5, 4, 3, 3});
  CHECK(dims(c.model, "conv1", 2) == std::vector<int64_t>{5});
  for (size_t i = 1; i <= 4; ++i) CHECK(dims(c.model, "bn", i) == std::vector<int64_t>{5});
  CHECK(dims(c.model, "conv2", 1) == std::vector<int64_t>{5, 5, 3, 3});
  const auto& groups = r.record["groups"];
  REQUIRE(groups.size() == 2);
  CHECK(groups[0]["kept"] == nlohmann::ordered_json({0, 2, 3, 5, 7}));
  // conv2's output is the graph output: left alone and reported.
  CHECK(groups[1]["producers"] == nlohmann::ordered_json({"conv2"}));
  CHECK(groups[1]["blocked"].get<std::string>().find("graph output 'Y'") != std::string::npos);
  CHECK(r.stats["groups_blocked"].get<int64_t>() == 1);
  // Nothing more to remove at sparsity 0.
  CHECK_FALSE(test::run_prune(c.model, {{"mode", "channel"}, {"sparsity", "0"}}).modified);
}

TEST_CASE("prune channel: a residual Add joins both branches into one group") {
  Case c = residual();
  auto r = prune_and_check(c);
  REQUIRE(r.record["groups"].size() == 2);
  CHECK(r.record["groups"][0]["producers"] == nlohmann::ordered_json({"conv_a", "conv_b"}));
  CHECK(r.record["groups"][0]["kept"] == nlohmann::ordered_json({0, 1, 3, 4, 6, 7}));
  CHECK(dims(c.model, "conv_a", 1) == std::vector<int64_t>{6, 4, 1, 1});
  CHECK(dims(c.model, "conv_b", 1) == std::vector<int64_t>{6, 6, 3, 3});
  CHECK(dims(c.model, "conv_c", 1) == std::vector<int64_t>{3, 6, 1, 1});
}

TEST_CASE("prune channel: Concat offsets reach the Gemm after GlobalAveragePool and Flatten") {
  Case c = concat();
  auto r = prune_and_check(c);
  CHECK(dims(c.model, "conv_a", 1) == std::vector<int64_t>{4, 4, 1, 1});
  CHECK(dims(c.model, "conv_b", 1) == std::vector<int64_t>{3, 4, 3, 3});
  CHECK(dims(c.model, "fc", 1) == std::vector<int64_t>{3, 7});
  CHECK(r.record["groups"][0]["kept"] == nlohmann::ordered_json({1, 2, 4, 5}));
  CHECK(r.record["groups"][1]["kept"] == nlohmann::ordered_json({0, 2, 3}));
}

TEST_CASE("prune channel: a depthwise conv follows its input channels (weights, bias, group)") {
  Case c = depthwise();
  auto r = prune_and_check(c);
  ir::Node* dw = test::node_named(*c.model.graph, "dw");
  CHECK(dw->attr_int("group", 0) == 6);
  CHECK(dims(c.model, "dw", 1) == std::vector<int64_t>{6, 1, 3, 3});
  CHECK(dims(c.model, "dw", 2) == std::vector<int64_t>{6});
  CHECK(dims(c.model, "project", 1) == std::vector<int64_t>{3, 6, 1, 1});
  CHECK(r.record["groups"][0]["depthwise"] == nlohmann::ordered_json({"dw"}));
}

TEST_CASE("prune channel: Gemm and MatMul heads, with a per-layer override rule") {
  Case c = gemm_head();
  auto r = prune_and_check(c);
  CHECK(dims(c.model, "fc1", 1) == std::vector<int64_t>{9, 16});
  CHECK(dims(c.model, "fc1", 2) == std::vector<int64_t>{9});
  CHECK(dims(c.model, "fc2", 1) == std::vector<int64_t>{9, 5});
  CHECK(dims(c.model, "bias2", 1) == std::vector<int64_t>{5});
  CHECK(dims(c.model, "fc3", 1) == std::vector<int64_t>{5, 5});
  CHECK(r.record["overrides"][0]["matched"] == nlohmann::ordered_json({"fc2"}));
}

TEST_CASE("prune channel: every pruned block runs in ONNX Runtime with unchanged outputs" *
          doctest::skip(!test::have_python_ort())) {
  for (Case (*make)() : {chain, residual, concat, depthwise, gemm_head}) {
    Case original = make(), c = make();
    CAPTURE(c.name);
    test::run_prune(c.model, c.opts);
    test::TempDir tmp("mcc-prune-ort");
    CHECK(test::ort_check(original.model, c.model, tmp.path) == 0);
  }
}

TEST_CASE("prune channel: a Reshape that mixes channels with other dims blocks the group") {
  ir::Model m = test::empty_model(kOpset);
  ir::Graph& g = *m.graph;
  add_input(g, "X", {1, 4, 6, 6});
  add_random_init(g, "W", {8, 4, 1, 1}, 1);
  g.add_initializer("shape", ir::Tensor::from_vector<int64_t>({2}, {1, -1}));
  add_random_init(g, "Wf", {288, 3}, 2);
  add_node(g, "Conv", "conv", {&v(g, "X"), &v(g, "W")}, {"c"}, kOpset);
  add_node(g, "Reshape", "reshape", {&v(g, "c"), &v(g, "shape")}, {"f"}, kOpset);
  add_node(g, "MatMul", "fc", {&v(g, "f"), &v(g, "Wf")}, {"Y"}, kOpset);
  output(g, {1, 3});
  auto r = test::run_prune(m, {{"mode", "channel"}, {"sparsity", "0.5"}});
  CHECK_FALSE(r.modified);
  CHECK(r.stats["groups_blocked"].get<int64_t>() == 2);
  CHECK(r.record["groups"][0]["blocked"].get<std::string>().find("Reshape") != std::string::npos);
  CHECK(dims(m, "conv", 1) == std::vector<int64_t>{8, 4, 1, 1});
}

TEST_CASE("prune channel: exclude keeps a whole group when one of its producers is excluded") {
  Case c = residual();
  auto r = test::run_prune(c.model, {{"mode", "channel"}, {"sparsity", "0.25"}, {"exclude", "conv_b"}});
  CHECK_FALSE(r.modified);
  CHECK(r.record["groups"][0]["skipped"] == "a producer is excluded");
  CHECK(dims(c.model, "conv_a", 1) == std::vector<int64_t>{8, 4, 1, 1});
}

TEST_CASE("prune channel: global scope ranks all groups together") {
  Case c = chain();
  auto r = test::run_prune(c.model, {{"mode", "channel"}, {"sparsity", "0.375"}, {"scope", "global"}});
  CHECK(r.modified);
  // Only conv1's group can be pruned; 3 of its 8 channels are removed (floor(0.375 * 8)).
  CHECK(r.stats["channels_removed"].get<int64_t>() == 3);
  CHECK(dims(c.model, "conv1", 1) == std::vector<int64_t>{5, 4, 3, 3});
}

TEST_CASE("prune channel: round_to keeps a multiple of N channels, giving back the most important") {
  Case c = chain();
  auto r = test::run_prune(c.model, {{"mode", "channel"}, {"sparsity", "0.375"}, {"round_to", "3"}});
  CHECK(r.modified);
  // 5 kept rounds up to 6: the most important of the three zero channels comes back (ties: lowest index).
  CHECK(dims(c.model, "conv1", 1) == std::vector<int64_t>{6, 4, 3, 3});
  CHECK(r.record["groups"][0]["kept"] == nlohmann::ordered_json({0, 1, 2, 3, 5, 7}));
  CHECK_THROWS_AS(test::run_prune(c.model, {{"mode", "channel"}, {"round_to", "0"}}), UsageError);
}
