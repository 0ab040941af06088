// quantize: QDQ structure (activations, per-channel weights on the right axis, int32 bias and its
// overflow guard, shared Concat scales, names kept), selection (exclusions, first-match rules,
// must-match errors), numerics against float32, exact replay, idempotence, opset handling.
#include <doctest/doctest.h>

#include <cmath>

#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;
using mcc::test::add_input;
using mcc::test::add_node;
using mcc::test::add_random_init;
using mcc::test::attr_i;
using mcc::test::attr_ints;
using mcc::test::cosine;
using mcc::test::run_quantize;

namespace {

// X[1,3,8,8] -> conv1 (pads 1) -> relu1 -> conv2 -> relu2 ─┐
//                                  └─> deconv (ConvTranspose 1x1) ──┴─ Concat -> GAP -> flat
// flat -> gemm (transB=1, bias) -> Y;  flat -> mm (MatMul) -> Z
ir::Model small_net(int opset = 13) {
  ir::Model m = test::empty_model(opset);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "X", {1, 3, 8, 8});
  auto& c1 = add_node(g, "Conv", "conv1", {&x, &add_random_init(g, "W1", {8, 3, 3, 3}, 1), &add_random_init(g, "B1", {8}, 2)},
                      {"c1"}, opset, {attr_ints("pads", {1, 1, 1, 1})});
  auto& r1 = add_node(g, "Relu", "relu1", {c1.outputs[0]}, {"r1"}, opset);
  auto& c2 = add_node(g, "Conv", "conv2", {r1.outputs[0], &add_random_init(g, "W2", {8, 8, 3, 3}, 3), &add_random_init(g, "B2", {8}, 4)},
                      {"c2"}, opset, {attr_ints("pads", {1, 1, 1, 1})});
  auto& r2 = add_node(g, "Relu", "relu2", {c2.outputs[0]}, {"r2"}, opset);
  auto& d = add_node(g, "ConvTranspose", "deconv",
                     {r1.outputs[0], &add_random_init(g, "W3", {8, 4, 1, 1}, 5), &add_random_init(g, "B3", {4}, 6)}, {"d"}, opset);
  auto& cat = add_node(g, "Concat", "cat", {r2.outputs[0], d.outputs[0]}, {"cat_out"}, opset, {attr_i("axis", 1)});
  auto& gap = add_node(g, "GlobalAveragePool", "gap", {cat.outputs[0]}, {"gap_out"}, opset);
  auto& fl = add_node(g, "Flatten", "flat", {gap.outputs[0]}, {"flat_out"}, opset);
  auto& gm = add_node(g, "Gemm", "gemm", {fl.outputs[0], &add_random_init(g, "Wg", {10, 12}, 7), &add_random_init(g, "Bg", {10}, 8)},
                      {"Y"}, opset, {attr_i("transB", 1)});
  auto& mm = add_node(g, "MatMul", "mm", {fl.outputs[0], &add_random_init(g, "Wm", {12, 5}, 9)}, {"Z"}, opset);
  test::mark_output(g, *gm.outputs[0]);
  test::mark_output(g, *mm.outputs[0]);
  return m;
}

/// The graph input's shape, which the calibration samples share.
const std::vector<int64_t> kInputDims = {1, 3, 8, 8};

const ir::Node* producer(const ir::Model& m, const std::string& value) {
  const ir::Value* v = m.graph->find_value(value);
  return v ? v->producer : nullptr;
}


}  // namespace

TEST_CASE("quantize wraps Conv/ConvTranspose/Gemm/MatMul in QDQ and stays close to float32") {
  test::CalibDir calib(kInputDims, 16, 100);
  ir::Model m = small_net();
  const auto feeds = test::random_feeds(m, 7);
  const auto before = test::run_cpu(m, feeds);
  const auto res = run_quantize(m, {{"calib", calib.path()}});
  CHECK(res.modified);                                                     // 1. it fired
  CHECK(res.stats["nodes_quantized"] == 5);
  CHECK_NOTHROW(ir::verify(m));
  // 2. structure: activations get Q->DQ and keep their names on the dequantized value.
  for (const char* act : {"X", "r1", "flat_out"}) {
    const ir::Value* v = m.graph->find_value(act);
    INFO(act);
    REQUIRE(v != nullptr);
  }
  CHECK(producer(m, "r1")->op_type == "DequantizeLinear");
  CHECK(producer(m, "r1")->inputs[0]->producer->op_type == "QuantizeLinear");
  CHECK(producer(m, "r1")->inputs[0]->producer->inputs[0]->name == "r1_float");
  CHECK(producer(m, "flat_out")->op_type == "DequantizeLinear");
  // The graph input keeps its name; its dequantized copy feeds conv1.
  CHECK(m.graph->inputs[0]->name == "X");
  const ir::Node* conv1 = producer(m, "c1");
  CHECK(conv1->inputs[0]->name == "X_dequantized");
  // Weights: int8 + DequantizeLinear on the per-op channel axis, output named as the weight.
  auto weight_axis = [&](const std::string& w) {
    const ir::Node* dq = producer(m, w);
    REQUIRE(dq != nullptr);
    CHECK(dq->op_type == "DequantizeLinear");
    CHECK(dq->inputs[0]->initializer->dtype() == ir::DType::I8);
    return dq->attr_int("axis", -99);
  };
  CHECK(weight_axis("W1") == 0);  // Conv
  CHECK(weight_axis("W3") == 1);  // ConvTranspose
  CHECK(weight_axis("Wg") == 0);  // Gemm transB=1: [N, K]
  CHECK(weight_axis("Wm") == 1);  // MatMul: [K, N]
  // Bias: int32 with scale = input scale x weight scale.
  const ir::Node* bdq = producer(m, "B1");
  REQUIRE(bdq != nullptr);
  CHECK(bdq->inputs[0]->initializer->dtype() == ir::DType::I32);
  const float sx = producer(m, "X_dequantized")->inputs[1]->initializer->data<float>()[0];
  const auto sw = producer(m, "W1")->inputs[1]->initializer->data<float>();
  const auto sb = bdq->inputs[1]->initializer->data<float>();
  for (size_t c = 0; c < sb.size(); ++c) CHECK(sb[c] == sx * sw[c]);
  CHECK(m.opset("") == 13);
  // 3. numerics: cosine >= 0.99 against float32 on the cpu executor.
  const auto after = test::run_cpu(m, feeds);
  CHECK(cosine(after[0], before[0]) >= 0.99);
  CHECK(cosine(after[1], before[1]) >= 0.99);
  // 4. idempotent: an already quantized model is left alone.
  const auto again = run_quantize(m, {{"calib", calib.path()}});
  CHECK_FALSE(again.modified);
  CHECK(again.stats["already_quantized"] == true);
}

TEST_CASE("quantize: Concat inputs share one scale (a recorded group)") {
  test::CalibDir calib(kInputDims, 8, 200);
  ir::Model m = small_net();
  const auto res = run_quantize(m, {{"calib", calib.path()}, {"op_types", "Conv,ConvTranspose,Gemm,MatMul,Concat"}});
  REQUIRE(res.record["groups"].size() == 1);
  CHECK(res.record["groups"][0] == nlohmann::ordered_json({"r2", "d"}));
  const float s_r2 = producer(m, "r2")->inputs[1]->initializer->data<float>()[0];
  const float s_d = producer(m, "d")->inputs[1]->initializer->data<float>()[0];
  CHECK(s_r2 == s_d);
  CHECK_NOTHROW(ir::verify(m));
}

TEST_CASE("quantize: exclusions and ordered rules, first match wins, recorded") {
  test::CalibDir calib(kInputDims, 4, 300);
  ir::Model m = small_net();
  const auto res = run_quantize(m, {{"calib", calib.path()},
                                    {"exclude", "MatMul"},
                                    {"rules", "conv1:skip;conv.*:per_tensor,gemm:int8"}});
  CHECK(res.modified);
  CHECK(m.graph->find_value("W1")->initializer.has_value());        // conv1 skipped: float weight
  CHECK(producer(m, "W2")->op_type == "DequantizeLinear");           // conv2: per-tensor
  CHECK_FALSE(producer(m, "W2")->has_attr("axis"));
  CHECK(producer(m, "W2")->inputs[1]->initializer->rank() == 0);
  CHECK(m.graph->find_value("Wm")->initializer.has_value());        // MatMul excluded by op type
  CHECK(producer(m, "flat_out")->inputs[0]->producer->inputs[2]->initializer->dtype() == ir::DType::I8);  // gemm int8
  const auto& rules = res.record["rules"];
  CHECK(rules[0]["matched"] == nlohmann::ordered_json({"conv1"}));
  CHECK(rules[1]["matched"] == nlohmann::ordered_json({"conv2"}));   // conv1 taken by rule 1
  CHECK(rules[2]["matched"] == nlohmann::ordered_json({"gemm"}));
  CHECK(res.record["exclude"][0]["matched"] == nlohmann::ordered_json({"mm"}));
}

TEST_CASE("quantize: a rule or exclude item that matches nothing is a usage error") {
  test::CalibDir calib(kInputDims, 2, 400);
  ir::Model m = small_net();
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"rules", "conv9:skip"}}), UsageError);
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"rules", "relu1:per_tensor"}}), UsageError);  // not quantized
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"rules", "conv1:skip,conv1:per_tensor"}}), UsageError);  // shadowed
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"rules", "conv1:fast"}}), UsageError);
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"exclude", "nothing_here"}}), UsageError);
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"op_types", "Softmax"}}), UsageError);
  CHECK_THROWS_AS(run_quantize(m, {}), UsageError);  // no calibration data
  CHECK(test::count_ops(m, "QuantizeLinear") == 0);  // nothing was changed
}

TEST_CASE("quantize: 16-bit activations need opset 21 (raised when every op keeps its meaning)") {
  test::CalibDir calib(kInputDims, 2, 500);
  ir::Model m = small_net(13);
  CHECK(run_quantize(m, {{"calib", calib.path()}, {"rules", "gemm:uint16"}}).record["opset"]["to"] == 21);
  CHECK(m.opset("") == 21);
  CHECK(m.ir_version >= 10);
  CHECK_NOTHROW(ir::verify(m));
  ir::Model m21 = small_net(21);
  const auto res = run_quantize(m21, {{"calib", calib.path()}, {"rules", "gemm:uint16"}});
  CHECK(res.modified);
  CHECK(producer(m21, "flat_out")->inputs[0]->initializer == std::nullopt);
  CHECK(producer(m21, "flat_out")->inputs[2]->initializer->dtype() == ir::DType::U16);
}

TEST_CASE("quantize: an older opset is raised when every op keeps its meaning, refused otherwise") {
  test::CalibDir calib(kInputDims, 2, 600);
  ir::Model m = small_net(11);
  CHECK(run_quantize(m, {{"calib", calib.path()}}).record["opset"]["to"] == 13);
  CHECK(m.opset("") == 13);
  CHECK_NOTHROW(ir::verify(m));
  // Softmax-11 over axes 1..3 of [1, 8, 8, 8] together: Softmax-13 runs along one axis.
  ir::Model s = small_net(11);
  ir::Node& sm = add_node(*s.graph, "Softmax", "softmax", {s.graph->find_value("r2")}, {"P"}, 11);
  test::mark_output(*s.graph, *sm.outputs[0]);
  CHECK_THROWS_AS(run_quantize(s, {{"calib", calib.path()}}), UnsupportedError);
  ir::Model t = small_net(11);
  add_node(*t.graph, "Softmax", "softmax", {t.graph->find_value("Y")}, {"P"}, 11);
  test::mark_output(*t.graph, *t.graph->find_value("P"));
  CHECK(run_quantize(t, {{"calib", calib.path()}, {"per_channel", "false"}}).record["opset"]["to"] == 11);  // per-tensor: 10 is enough
}

TEST_CASE("quantize: the int32 bias overflow guard widens the weight scale of a dead channel") {
  test::CalibDir calib(kInputDims, 4, 700);
  ir::Model m = small_net();
  // Channel 0 of conv1: tiny weights, large bias -> bias / (sx * sw) would exceed int32.
  ir::Value* w1 = m.graph->find_value("W1");
  ir::Tensor w = w1->initializer->clone();
  for (int i = 0; i < 27; ++i) w.mutable_data<float>()[i] = 1e-9f;
  w1->initializer = w;
  ir::Value* b1 = m.graph->find_value("B1");
  ir::Tensor b = b1->initializer->clone();
  b.mutable_data<float>()[0] = 5.f;
  b1->initializer = b;
  const auto feeds = test::random_feeds(m, 3);
  const auto before = test::run_cpu(m, feeds);
  const auto res = run_quantize(m, {{"calib", calib.path()}});
  CHECK(res.stats["bias_scale_guards"] == 1);
  const ir::Node* bdq = producer(m, "B1");
  const auto qb = bdq->inputs[0]->initializer->data<int32_t>();
  CHECK(std::abs(static_cast<int64_t>(qb[0])) <= (int64_t{1} << 30));
  const float sb0 = bdq->inputs[1]->initializer->data<float>()[0];
  CHECK(static_cast<double>(qb[0]) * sb0 == doctest::Approx(5.0).epsilon(1e-6));  // the bias survives
  bool noted = false;
  for (const auto& p : res.record["points"]) noted = noted || (p["tensor"] == "W1" && p.contains("note"));
  CHECK(noted);
  CHECK(cosine(test::run_cpu(m, feeds)[0], before[0]) >= 0.99);
}

TEST_CASE("quantize: replay from the record rebuilds the identical model without calibration data") {
  ir::Model a = small_net(), b = small_net();
  nlohmann::ordered_json record;
  {
    test::CalibDir calib(kInputDims, 8, 800);
    record = run_quantize(a, {{"calib", calib.path()}, {"method", "entropy"}, {"rules", "conv2:per_tensor"}}).record;
  }  // the calibration folder is gone now
  // The record goes through text, as in a state file.
  const auto parsed = nlohmann::ordered_json::parse(record.dump(2));
  const auto res = run_quantize(b, {{"calib", "/nonexistent"}, {"method", "entropy"}, {"rules", "conv2:per_tensor"}}, &parsed);
  CHECK(res.modified);
  CHECK(ir::serialize_model(a) == ir::serialize_model(b));
  CHECK(res.record == record);
  // Scales were written as the double of the float and read back exactly.
  for (const auto& p : parsed["points"])
    if (p["axis"].is_null()) CHECK(static_cast<double>(static_cast<float>(p["scale"].get<double>())) == p["scale"].get<double>());
}

TEST_CASE("quantize: a replay record that does not fit the model is a model error") {
  test::CalibDir calib(kInputDims, 2, 900);
  ir::Model a = small_net();
  auto record = run_quantize(a, {{"calib", calib.path()}}).record;
  ir::Model b = small_net();
  record["points"][0]["tensor"] = "no_such_tensor";
  CHECK_THROWS_AS(run_quantize(b, {}, &record), ModelError);
  ir::Model c = small_net(12);
  auto rec2 = run_quantize(a = small_net(), {{"calib", calib.path()}}).record;
  CHECK_THROWS_AS(run_quantize(c, {}, &rec2), ModelError);  // recorded for opset 13
  nlohmann::ordered_json bad = rec2;
  bad["points"][0]["scale"] = 0.1;  // not a float32 value
  ir::Model d = small_net();
  CHECK_THROWS_AS(run_quantize(d, {}, &bad), ModelError);
}
