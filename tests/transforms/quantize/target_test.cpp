// quantize targets (quantize/target.h): where each target puts QDQ (ort: around the ops its QDQ
// fusion runs in int8, a chain that ends in float left float, MaxPool sharing its input's scale;
// openvino: symmetric int8 inputs; generic: weighted ops' inputs only), one scale per activation
// outside generic, the default, the record and exact replay.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "ir/errors.h"
#include "ir/npy.h"
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

// X[1,4,8,8] -> conv1 -> c1 -> Sigmoid -> s1 -> Mul(c1, s1) -> m1 -> MaxPool -> p1 -> conv2 -> c2
//   -> Sigmoid -> Y (graph output): SiLU, pooling, and a head that ends in float.
ir::Model silu_net(int opset = 13) {
  ir::Model m = test::empty_model(opset);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "X", {1, 4, 8, 8});
  auto& c1 = add_node(g, "Conv", "conv1", {&x, &add_random_init(g, "W1", {8, 4, 3, 3}, 1), &add_random_init(g, "B1", {8}, 2)},
                      {"c1"}, opset, {attr_ints("pads", {1, 1, 1, 1})});
  auto& s1 = add_node(g, "Sigmoid", "sig1", {c1.outputs[0]}, {"s1"}, opset);
  auto& m1 = add_node(g, "Mul", "mul1", {c1.outputs[0], s1.outputs[0]}, {"m1"}, opset);
  auto& p1 = add_node(g, "MaxPool", "pool1", {m1.outputs[0]}, {"p1"}, opset,
                      {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
  auto& c2 = add_node(g, "Conv", "conv2", {p1.outputs[0], &add_random_init(g, "W2", {6, 8, 1, 1}, 3), &add_random_init(g, "B2", {6}, 4)},
                      {"c2"}, opset);
  auto& y = add_node(g, "Sigmoid", "sig2", {c2.outputs[0]}, {"Y"}, opset);
  test::mark_output(g, *y.outputs[0]);
  return m;
}

const std::vector<int64_t> kDims = {1, 4, 8, 8};

std::string producer_op(const ir::Model& m, const std::string& value) {
  const ir::Value* v = m.graph->find_value(value);
  return v && v->producer ? v->producer->op_type : "";
}

/// The record's activation points by tensor name.
std::map<std::string, nlohmann::ordered_json> activation_points(const nlohmann::ordered_json& record) {
  std::map<std::string, nlohmann::ordered_json> out;
  for (const auto& p : record["points"])
    if (p["role"] == "activation") out[p["tensor"].get<std::string>()] = p;
  return out;
}


}  // namespace

TEST_CASE("quantize target=ort: QDQ on both sides of the ops ONNX Runtime fuses, float where the chain ends in float") {
  test::CalibDir calib(kDims, 8, 300);
  ir::Model m = silu_net();
  const auto feeds = test::random_feeds(m, 5);
  const auto before = test::run_cpu(m, feeds);
  const auto res = run_quantize(m, {{"calib", calib.path()}, {"target", "ort"}});
  CHECK_NOTHROW(ir::verify(m));
  // The conv output, the sigmoid output, the SiLU product and the pooled value are quantized: each
  // dequantized value keeps its name.
  CHECK(producer_op(m, "X_dequantized") == "DequantizeLinear");  // a graph input keeps its name
  for (const char* v : {"c1", "s1", "m1", "p1"}) {
    INFO(v);
    CHECK(producer_op(m, v) == "DequantizeLinear");
  }
  // conv2's output feeds only the float head (Sigmoid -> graph output): no QDQ there.
  CHECK(producer_op(m, "c2") == "Conv");
  CHECK(producer_op(m, "Y") == "Sigmoid");
  bool sig2_skipped = false;
  for (const auto& s : res.record["skipped_nodes"]) sig2_skipped = sig2_skipped || s["node"] == "sig2";
  CHECK(sig2_skipped);
  // MaxPool's output shares its input's scale and zero point (runtimes drop that QDQ pair).
  const auto acts = activation_points(res.record);
  REQUIRE(acts.count("m1"));
  REQUIRE(acts.count("p1"));
  CHECK(acts.at("m1")["scale"] == acts.at("p1")["scale"]);
  CHECK(acts.at("m1")["zero_point"] == acts.at("p1")["zero_point"]);
  CHECK(acts.at("m1")["group"] == acts.at("p1")["group"]);
  for (const auto& [name, p] : acts) {
    INFO(name);
    CHECK(p["axis"].is_null());  // one scale per activation
    CHECK(p["dtype"] == "u8");
  }
  CHECK(res.record["target"] == "ort");
  CHECK(cosine(test::run_cpu(m, feeds)[0], before[0]) >= 0.99);
}

TEST_CASE("quantize: the default target is ort; generic keeps QDQ on the weighted ops' inputs only") {
  test::CalibDir calib(kDims, 8, 310);
  ir::Model by_default = silu_net(), ort = silu_net(), generic = silu_net();
  {
    auto pass = transforms::quantize::make_pass();
    transforms::Options o(pass->info(), {{"calib", calib.path()}});
    transforms::PassContext ctx{o, "quantize", nullptr, ".", 1, ""};
    CHECK(pass->run(by_default, ctx).record["target"] == "ort");
  }
  run_quantize(ort, {{"calib", calib.path()}, {"target", "ort"}});
  CHECK(ir::serialize_model(by_default) == ir::serialize_model(ort));
  run_quantize(generic, {{"calib", calib.path()}, {"target", "generic"}});
  CHECK(producer_op(generic, "X_dequantized") == "DequantizeLinear");
  CHECK(producer_op(generic, "p1") == "DequantizeLinear");  // conv2's input
  for (const char* v : {"c1", "s1", "m1"}) {
    INFO(v);
    CHECK(producer_op(generic, v) != "DequantizeLinear");
  }
}

TEST_CASE("quantize target=openvino: symmetric int8 activations on the weighted ops' inputs") {
  test::CalibDir calib(kDims, 8, 320);
  ir::Model m = silu_net();
  const auto res = run_quantize(m, {{"calib", calib.path()}, {"target", "openvino"}});
  const auto acts = activation_points(res.record);
  CHECK(acts.count("X"));
  CHECK(acts.count("p1"));
  CHECK_FALSE(acts.count("s1"));  // SiLU stays float between the convolutions
  for (const auto& [name, p] : acts) {
    INFO(name);
    CHECK(p["dtype"] == "i8");
    CHECK(p["zero_point"] == 0);
    CHECK(p["axis"].is_null());
  }
  // activation_type given explicitly wins over the target's.
  ir::Model u = silu_net();
  const auto ru = run_quantize(u, {{"calib", calib.path()}, {"target", "openvino"}, {"activation_type", "uint8"}});
  for (const auto& [name, p] : activation_points(ru.record)) CHECK(p["dtype"] == "u8");
}

TEST_CASE("quantize target=openvino: a Transpose output stays float where it feeds a MatMul; ort quantizes it") {
  // X[1,8,16] -> Transpose(0,2,1) -> t [1,16,8] -> MatMul(W [8,4]) -> Y: the attention-head layout
  // whose quantized Transpose outputs OpenVINO 2026.4 fails to compile (quantize/target.h).
  auto build = [] {
    ir::Model m = test::empty_model(13);
    ir::Graph& g = *m.graph;
    ir::Value& x = add_input(g, "X", {1, 8, 16});
    auto& t = add_node(g, "Transpose", "tr", {&x}, {"t"}, 13, {attr_ints("perm", {0, 2, 1})});
    auto& y = add_node(g, "MatMul", "mm", {t.outputs[0], &add_random_init(g, "W", {8, 4}, 5)}, {"Y"}, 13);
    test::mark_output(g, *y.outputs[0]);
    return m;
  };
  ir::Model m = build(), o = build();
  test::CalibDir calib({1, 8, 16}, 6, 330);
  const auto ov = run_quantize(m, {{"calib", calib.path()}, {"target", "openvino"}});
  CHECK_FALSE(activation_points(ov.record).count("t"));
  const auto ort = run_quantize(o, {{"calib", calib.path()}, {"target", "ort"}});
  CHECK(activation_points(ort.record).count("t"));
}

TEST_CASE("quantize: depthwise inputs get per-channel scales with target=generic only") {
  // X[1,3,6,6]: channels 0 and 1 in [0, 1], channel 2 in [0, 200] -> a depthwise conv.
  test::TempDir dir{"mcc-calib-dw"};
  for (int i = 0; i < 6; ++i) {
    ir::Tensor t = test::random_tensor({1, 3, 6, 6}, 40 + i, 0.f, 1.f);
    auto d = t.mutable_data<float>();
    for (size_t k = 72; k < 108; ++k) d[k] *= 200.f;
    const auto sample = dir.path / ("s" + std::to_string(i));
    std::filesystem::create_directories(sample);
    ir::save_npy(t, (sample / "X.npy").string());
  }
  auto net = [] {
    ir::Model m = test::empty_model(13);
    ir::Graph& g = *m.graph;
    ir::Value& x = add_input(g, "X", {1, 3, 6, 6});
    auto& c = add_node(g, "Conv", "dw", {&x, &add_random_init(g, "W", {3, 1, 3, 3}, 9), &add_random_init(g, "B", {3}, 10)}, {"Y"}, 13,
                       {attr_i("group", 3)});
    test::mark_output(g, *c.outputs[0]);
    return m;
  };
  ir::Model generic = net(), ort = net();
  const auto rg = run_quantize(generic, {{"calib", dir.path.string()}, {"target", "generic"}});
  const auto ro = run_quantize(ort, {{"calib", dir.path.string()}, {"target", "ort"}});
  CHECK(activation_points(rg.record).at("X")["axis"] == 1);
  CHECK(activation_points(ro.record).at("X")["axis"].is_null());
}

TEST_CASE("quantize target=ort: replay from the record is byte-identical without calibration data") {
  ir::Model a = silu_net(11), b = silu_net(11);
  nlohmann::ordered_json record;
  {
    test::CalibDir calib(kDims, 6, 330);
    record = run_quantize(a, {{"calib", calib.path()}, {"target", "ort"}}).record;
  }
  const auto parsed = nlohmann::ordered_json::parse(record.dump(2));
  run_quantize(b, {{"calib", "/nonexistent"}, {"target", "ort"}}, &parsed);
  CHECK(ir::serialize_model(a) == ir::serialize_model(b));
}

TEST_CASE("quantize: an unknown target is a usage error naming the known ones") {
  test::CalibDir calib(kDims, 2, 340);
  ir::Model m = silu_net();
  try {
    run_quantize(m, {{"calib", calib.path()}, {"target", "tensorrt"}});
    FAIL("no error");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("openvino") != std::string::npos);
  }
}

TEST_CASE("quantize target=ort: a layer whose input stays float keeps float weights; generic keeps them int8") {
  // keep_float_top=4 leaves every measured activation float.
  test::CalibDir calib(kDims, 4, 5200);
  auto weight_dequantized = [](const ir::Model& m, const std::string& w) {
    const ir::Value* v = m.graph->find_value(w);
    if (!v) return false;
    if (v->producer && v->producer->op_type == "DequantizeLinear") return true;
    for (const auto& u : v->uses)
      if (u.user->op_type == "DequantizeLinear") return true;
    return false;
  };
  ir::Model ort = silu_net(), generic = silu_net();
  const auto r = run_quantize(ort, {{"calib", calib.path()}, {"target", "ort"}, {"keep_float_top", "4"}});
  CHECK(r.record["stats"]["activations"] == 0);
  CHECK(r.record["stats"]["weights"] == 0);
  CHECK_FALSE(weight_dequantized(ort, "W1"));
  CHECK_FALSE(weight_dequantized(ort, "W2"));
  bool listed = false;
  for (const auto& s : r.record["skipped_tensors"])
    listed = listed || (s["tensor"] == "W1" && s["reason"].get<std::string>().find("input stays float") != std::string::npos);
  CHECK(listed);
  CHECK(r.record["mixed"]["float_run_gap"] == 24);
  const auto g = run_quantize(generic, {{"calib", calib.path()}, {"target", "generic"}, {"keep_float_top", "4"}});
  CHECK(g.record["stats"]["weights"] == 2);
  CHECK(weight_dequantized(generic, "W1"));
  CHECK_FALSE(g.record["mixed"].contains("float_run_gap"));
}

TEST_CASE("quantize target=ort: a chain of scalar affine steps (Mul, Add by one-element constants) is rounded once") {
  // X -> conv1 -> c1 -> Relu -> r1 -> Mul(r1, 0.7) -> a1 -> Add(a1, -0.2) -> a2 -> conv2 -> Y
  auto net = [] {
    ir::Model m = test::empty_model(13);
    ir::Graph& g = *m.graph;
    ir::Value& x = add_input(g, "X", {1, 4, 8, 8});
    auto& c1 = add_node(g, "Conv", "conv1", {&x, &add_random_init(g, "W1", {8, 4, 3, 3}, 11), &add_random_init(g, "B1", {8}, 12)},
                        {"c1"}, 13, {attr_ints("pads", {1, 1, 1, 1})});
    auto& r1 = add_node(g, "Relu", "relu1", {c1.outputs[0]}, {"r1"}, 13);
    auto& a1 = add_node(g, "Mul", "scale1", {r1.outputs[0], &g.add_initializer("k", ir::Tensor::from_vector<float>({1}, {0.7f}))},
                        {"a1"}, 13);
    auto& a2 = add_node(g, "Add", "shift1", {a1.outputs[0], &g.add_initializer("b", ir::Tensor::from_vector<float>({1}, {-0.2f}))},
                        {"a2"}, 13);
    auto& y = add_node(g, "Conv", "conv2", {a2.outputs[0], &add_random_init(g, "W2", {6, 8, 1, 1}, 13)}, {"Y"}, 13);
    test::mark_output(g, *y.outputs[0]);
    return m;
  };
  test::CalibDir calib(kDims, 6, 5300);
  ir::Model ort = net(), generic = net();
  const auto feeds = test::random_feeds(ort, 7);
  const auto before = test::run_cpu(ort, feeds);
  const auto r = run_quantize(ort, {{"calib", calib.path()}, {"target", "ort"}});
  // Only conv2's input is quantized after conv1: the steps run float between DQ and Q.
  CHECK(producer_op(ort, "a2") == "DequantizeLinear");
  CHECK(producer_op(ort, "a1") == "Mul");
  CHECK(producer_op(ort, "r1") == "Relu");
  const auto points = activation_points(r.record);
  CHECK(points.count("a2") == 1);
  CHECK(points.count("a1") == 0);
  CHECK(points.count("r1") == 0);
  int steps_skipped = 0;
  for (const auto& s : r.record["skipped_nodes"])
    steps_skipped += s["reason"].get<std::string>().find("scalar affine step") != std::string::npos;
  CHECK(steps_skipped == 2);
  CHECK(cosine(before[0], test::run_cpu(ort, feeds)[0]) > 0.99);
  // generic never quantized the steps (not weighted ops): nothing to record there.
  const auto g = run_quantize(generic, {{"calib", calib.path()}, {"target", "generic"}});
  for (const auto& s : g.record["skipped_nodes"])
    CHECK(s["reason"].get<std::string>().find("scalar affine step") == std::string::npos);
}

TEST_CASE("quantize target=ort: the image stem (first conv on a 3-channel input, its SiLU) and its reader run float") {
  // X[1,3,8,8] -> stem -> c1 -> SiLU (Sigmoid, Mul) -> m1 -> conv2 -> c2 -> Relu -> r2 -> conv3 -> Y
  auto net = [] {
    ir::Model m = test::empty_model(13);
    ir::Graph& g = *m.graph;
    ir::Value& x = add_input(g, "X", {1, 3, 8, 8});
    auto& c1 = add_node(g, "Conv", "stem", {&x, &add_random_init(g, "W1", {8, 3, 3, 3}, 21), &add_random_init(g, "B1", {8}, 22)},
                        {"c1"}, 13, {attr_ints("pads", {1, 1, 1, 1})});
    auto& s1 = add_node(g, "Sigmoid", "sig1", {c1.outputs[0]}, {"s1"}, 13);
    auto& m1 = add_node(g, "Mul", "mul1", {c1.outputs[0], s1.outputs[0]}, {"m1"}, 13);
    auto& c2 = add_node(g, "Conv", "conv2", {m1.outputs[0], &add_random_init(g, "W2", {8, 8, 1, 1}, 23)}, {"c2"}, 13);
    auto& r2 = add_node(g, "Relu", "relu2", {c2.outputs[0]}, {"r2"}, 13);
    auto& y = add_node(g, "Conv", "conv3", {r2.outputs[0], &add_random_init(g, "W3", {4, 8, 1, 1}, 24)}, {"Y"}, 13);
    test::mark_output(g, *y.outputs[0]);
    return m;
  };
  const std::vector<int64_t> dims = {1, 3, 8, 8};
  test::CalibDir calib(dims, 6, 5400);
  ir::Model ort = net(), generic = net();
  const auto feeds = test::random_feeds(ort, 9);
  const auto before = test::run_cpu(ort, feeds);
  const auto r = run_quantize(ort, {{"calib", calib.path()}, {"target", "ort"}});
  CHECK_NOTHROW(ir::verify(ort));
  const auto points = activation_points(r.record);
  // The stem reads X float, its SiLU stays float, and conv2 (reading the SiLU) runs float with
  // float weights; conv2's output onwards is int8.
  for (const char* v : {"X", "c1", "s1", "m1"}) {
    INFO(v);
    CHECK(points.count(v) == 0);
  }
  CHECK(producer_op(ort, "m1") == "Mul");
  CHECK(points.count("r2") == 1);
  CHECK(producer_op(ort, "r2") == "DequantizeLinear");
  std::set<std::string> stem_nodes;
  for (const auto& s : r.record["skipped_nodes"])
    if (s["reason"].get<std::string>().find("image stem") != std::string::npos) stem_nodes.insert(s["node"].get<std::string>());
  CHECK(stem_nodes == std::set<std::string>{"stem", "sig1", "mul1"});
  std::set<std::string> float_weights;
  for (const auto& s : r.record["skipped_tensors"]) float_weights.insert(s["tensor"].get<std::string>());
  CHECK(float_weights.count("W2") == 1);
  CHECK(r.record["stats"]["weights"] == 1);  // W3 only
  CHECK(cosine(before[0], test::run_cpu(ort, feeds)[0]) > 0.99);
  // generic has no such rule: the image input is quantized.
  const auto g = run_quantize(generic, {{"calib", calib.path()}, {"target", "generic"}});
  CHECK(activation_points(g.record).count("X") == 1);
  CHECK(g.record["stats"]["weights"] == 3);
  // A per-layer rule naming the stem decides for it: quantized, and so is what follows.
  ir::Model ruled = net();
  const auto rr = run_quantize(ruled, {{"calib", calib.path()}, {"target", "ort"}, {"rules", "stem:per_tensor"}});
  CHECK(activation_points(rr.record).count("X") == 1);
  CHECK(activation_points(rr.record).count("m1") == 1);
  CHECK(rr.record["stats"]["weights"] == 3);
}
