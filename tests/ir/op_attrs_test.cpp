// Typed attribute views (ConvAttrs, GemmAttrs, BatchNormAttrs) and weight layouts of Conv,
// ConvTranspose, Gemm and MatMul.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "ir/op_attrs.h"
#include "ir/op_facts.h"
#include "ir/weight_layout.h"
#include "support/op_test.h"

using namespace mcc::ir;
using mcc::test::attr_f;
using mcc::test::attr_i;
using mcc::test::attr_is;
using mcc::test::attr_s;
using Dims = std::vector<int64_t>;

namespace {
Node& node(Graph& g, const char* op, std::vector<Attribute> attrs = {}, int since_version = 17) {
  Node& n = g.add_node(op, "", op, {}, {g.unique_name("y")});
  for (auto& a : attrs) n.set_attr(std::move(a));
  n.since_version = since_version;
  return n;
}
}  // namespace

TEST_CASE("ConvAttrs: ONNX defaults when absent") {
  Graph g;
  const ConvAttrs a(node(g, "Conv"));
  CHECK(a.group() == 1);
  CHECK(a.offset_group() == 1);
  CHECK(a.auto_pad() == "NOTSET");
  CHECK(a.kernel_shape().empty());
  CHECK(a.strides().empty());
  CHECK(a.dilations().empty());
  CHECK(a.pads().empty());
  CHECK(a.output_padding().empty());
  CHECK(a.output_shape().empty());
  CHECK(a.strides(2) == Dims{1, 1});
  CHECK(a.dilations(3) == Dims{1, 1, 1});
  CHECK(a.pads(2) == Dims{0, 0, 0, 0});
  CHECK(a.output_padding(1) == Dims{0});
}

TEST_CASE("ConvAttrs: explicit values, whatever the spatial rank asked for") {
  Graph g;
  const ConvAttrs a(node(g, "ConvTranspose",
                         {attr_i("group", 4), attr_i("offset_group", 2), attr_s("auto_pad", "SAME_LOWER"),
                          attr_is("kernel_shape", {3, 3}), attr_is("strides", {2, 1}),
                          attr_is("dilations", {1, 2}), attr_is("pads", {1, 0, 1, 0}),
                          attr_is("output_padding", {1, 0}), attr_is("output_shape", {8, 9})}));
  CHECK(a.group() == 4);
  CHECK(a.offset_group() == 2);
  CHECK(a.auto_pad() == "SAME_LOWER");
  CHECK(a.kernel_shape() == Dims{3, 3});
  CHECK(a.strides() == Dims{2, 1});
  CHECK(a.strides(3) == Dims{2, 1});  // as written: the length check is the caller's
  CHECK(a.dilations() == Dims{1, 2});
  CHECK(a.dilations(2) == Dims{1, 2});
  CHECK(a.pads() == Dims{1, 0, 1, 0});
  CHECK(a.pads(2) == Dims{1, 0, 1, 0});
  CHECK(a.output_padding() == Dims{1, 0});
  CHECK(a.output_padding(2) == Dims{1, 0});
  CHECK(a.output_shape() == Dims{8, 9});
}

TEST_CASE("ConvAttrs: an empty auto_pad stays empty; a wrong kind raises the node's error") {
  Graph g;
  CHECK(ConvAttrs(node(g, "Conv", {attr_s("auto_pad", "")})).auto_pad().empty());
  const ConvAttrs a(node(g, "Conv", {attr_f("group", 2.f), attr_i("strides", 2)}));
  CHECK_THROWS_WITH_AS(a.group(), doctest::Contains("attribute 'group' must be an int"), mcc::ModelError);
  CHECK_THROWS_AS(a.strides(), mcc::ModelError);
  CHECK(a.pads().empty());  // other attributes still read
}

TEST_CASE("GemmAttrs: defaults and explicit values") {
  Graph g;
  const GemmAttrs d(node(g, "Gemm"));
  CHECK_FALSE(d.trans_a());
  CHECK_FALSE(d.trans_b());
  CHECK(d.alpha() == 1.0f);
  CHECK(d.beta() == 1.0f);
  const GemmAttrs e(node(g, "Gemm", {attr_i("transA", 1), attr_i("transB", 2), attr_f("alpha", 0.5f),
                                     attr_f("beta", 0.f)}));
  CHECK(e.trans_a());
  CHECK(e.trans_b());  // any non-zero value
  CHECK(e.alpha() == 0.5f);
  CHECK(e.beta() == 0.0f);
  CHECK(GemmAttrs(node(g, "Gemm", {attr_i("alpha", 2)})).alpha() == 2.0f);  // ints read as floats
}

TEST_CASE("BatchNormAttrs: defaults, explicit values and opset-dependent flags") {
  Graph g;
  const BatchNormAttrs d(node(g, "BatchNormalization", {}, 15));
  CHECK(d.epsilon() == 1e-5f);
  CHECK(d.momentum() == 0.9f);
  CHECK_FALSE(d.training_mode());
  CHECK_FALSE(d.is_test());
  CHECK_FALSE(d.per_activation());
  const BatchNormAttrs e(node(g, "BatchNormalization",
                              {attr_f("epsilon", 1e-3f), attr_f("momentum", 0.99f), attr_i("training_mode", 1)}, 15));
  CHECK(e.epsilon() == 1e-3f);
  CHECK(e.momentum() == 0.99f);
  CHECK(e.training_mode());
  // spatial=0 means per-activation statistics only before opset 9; later the attribute is gone.
  CHECK(BatchNormAttrs(node(g, "BatchNormalization", {attr_i("spatial", 0)}, 7)).per_activation());
  CHECK_FALSE(BatchNormAttrs(node(g, "BatchNormalization", {attr_i("spatial", 1)}, 7)).per_activation());
  CHECK_FALSE(BatchNormAttrs(node(g, "BatchNormalization", {attr_i("spatial", 0)}, 9)).per_activation());
  CHECK_FALSE(BatchNormAttrs(node(g, "BatchNormalization", {attr_f("spatial", 0.f)}, 9)).per_activation());
  CHECK(BatchNormAttrs(node(g, "BatchNormalization", {attr_i("is_test", 1)}, 6)).is_test());
}

TEST_CASE("weight_layout: Conv W[M, C/g, k..]") {
  Graph g;
  const auto l = weight_layout(node(g, "Conv"), {8, 3, 3, 3});
  REQUIRE(l);
  CHECK(l->weight_input == 1);
  CHECK(l->out_axis == 0);
  CHECK(l->in_axis == 1);
  CHECK(l->group == 1);
  CHECK(l->out_channels == 8);
  CHECK(l->group_divides);
  const auto grouped = weight_layout(node(g, "Conv", {attr_i("group", 4)}), {8, 2, 3});
  REQUIRE(grouped);
  CHECK(grouped->group == 4);
  CHECK(grouped->out_channels == 8);  // the group does not multiply Conv's M
  CHECK(grouped->group_divides);
  CHECK_FALSE(weight_layout(node(g, "Conv", {attr_i("group", 3)}), {8, 2, 3})->group_divides);
  CHECK_FALSE(weight_layout(node(g, "Conv", {attr_i("group", 0)}), {8, 2, 3})->group_divides);
  // Rank: at least one kernel dim by default; both channel axes with ChannelAxes.
  CHECK_FALSE(weight_layout(node(g, "Conv"), {8, 3}));
  CHECK(weight_layout(node(g, "Conv"), {8, 3}, ConvWeightRank::ChannelAxes)->out_channels == 8);
  CHECK_FALSE(weight_layout(node(g, "Conv"), {8}, ConvWeightRank::ChannelAxes));
  CHECK_FALSE(weight_layout(node(g, "Conv"), {}, ConvWeightRank::ChannelAxes));
}

TEST_CASE("weight_layout: ConvTranspose W[C, M/g, k..] has M = dims[1] * group") {
  Graph g;
  const auto l = weight_layout(node(g, "ConvTranspose"), {6, 4, 3, 3});
  REQUIRE(l);
  CHECK(l->out_axis == 1);
  CHECK(l->in_axis == 0);
  CHECK(l->out_channels == 4);
  const auto grouped = weight_layout(node(g, "ConvTranspose", {attr_i("group", 3)}), {6, 4, 3, 3});
  REQUIRE(grouped);
  CHECK(grouped->out_axis == 1);
  CHECK(grouped->group == 3);
  CHECK(grouped->out_channels == 12);
  CHECK(grouped->group_divides);  // 3 divides C = 6
  const auto bad = weight_layout(node(g, "ConvTranspose", {attr_i("group", 4)}), {6, 4, 3});
  REQUIRE(bad);  // described anyway: callers that walk groups check group_divides
  CHECK(bad->out_channels == 16);
  CHECK_FALSE(bad->group_divides);
  CHECK(weight_layout(node(g, "ConvTranspose", {attr_i("group", 2)}), {6, 4}, ConvWeightRank::ChannelAxes)
            ->out_channels == 8);
  CHECK_FALSE(weight_layout(node(g, "ConvTranspose"), {6, 4}));
}

TEST_CASE("weight_layout: Gemm B[K, N], or [N, K] with transB") {
  Graph g;
  const auto l = weight_layout(node(g, "Gemm"), {5, 7});
  REQUIRE(l);
  CHECK(l->weight_input == 1);
  CHECK(l->out_axis == 1);
  CHECK(l->in_axis == 0);
  CHECK(l->group == 1);
  CHECK(l->out_channels == 7);
  const auto t = weight_layout(node(g, "Gemm", {attr_i("transB", 1), attr_i("transA", 1)}), {7, 5});
  REQUIRE(t);
  CHECK(t->out_axis == 0);
  CHECK(t->in_axis == 1);
  CHECK(t->out_channels == 7);
  CHECK_FALSE(weight_layout(node(g, "Gemm"), {5}));
  CHECK_FALSE(weight_layout(node(g, "Gemm"), {2, 5, 7}));
  CHECK_FALSE(weight_layout(node(g, "Gemm"), {5, 7}, ConvWeightRank::ChannelAxes)->out_axis == 0);
}

TEST_CASE("weight_layout: MatMul B[K, N] of rank 2 only; other ops have none") {
  Graph g;
  const auto l = weight_layout(node(g, "MatMul"), {5, 7});
  REQUIRE(l);
  CHECK(l->out_axis == 1);
  CHECK(l->in_axis == 0);
  CHECK(l->out_channels == 7);
  CHECK_FALSE(weight_layout(node(g, "MatMul"), {3, 5, 7}));
  CHECK_FALSE(weight_layout(node(g, "MatMul"), {3, 5, 7}, ConvWeightRank::ChannelAxes));
  CHECK_FALSE(weight_layout(node(g, "MatMul"), {7}));
  CHECK_FALSE(weight_layout(node(g, "ConvInteger"), {8, 3, 3, 3}));
  CHECK_FALSE(weight_layout(node(g, "Add"), {5, 7}));
  Node& custom = node(g, "Conv");
  custom.domain = "com.example";
  CHECK_FALSE(weight_layout(custom, {8, 3, 3, 3}));
}

TEST_CASE("weight_layout and op facts agree: every op with a weight layout is marked as carrying weights") {
  Graph g;
  int with_layout = 0;
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul"}) {
    CAPTURE(op);
    const Dims dims = std::string(op) == "Gemm" || std::string(op) == "MatMul" ? Dims{4, 6} : Dims{4, 6, 3, 3};
    REQUIRE(weight_layout(node(g, op), dims));
    ++with_layout;
    const OpFacts* f = op_facts(op);
    REQUIRE(f != nullptr);
    CHECK(f->weights);
  }
  CHECK(with_layout == 4);
}
