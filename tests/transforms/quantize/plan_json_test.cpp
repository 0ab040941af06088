// Quantize points in JSON: the newer forms (block-wise weights with their scales as float32
// bytes, 4-bit weights, dynamic activations) round-trip through the record, the committed
// states' points keep their bytes, and apply_plan refuses a form it cannot write (blocks along
// another axis than K, 4-bit without blocks) with one line, leaving the model as it was.
#include <doctest/doctest.h>

#include <fstream>

#include "ir/errors.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;
using transforms::quantize::point_from_json;
using transforms::quantize::point_to_json;
using transforms::quantize::QPoint;
using transforms::quantize::Role;
using json = nlohmann::ordered_json;

namespace {

QPoint blockwise_int4_weight() {
  QPoint p;
  p.tensor = "W";
  p.role = Role::Weight;
  p.dtype = ir::DType::I4;
  p.axis = 1;
  p.block_size = 32;
  p.scale = {0.5f, 0.25f, 0.125f, 0.0625f};
  p.zero_point = {0, 0, 0, 0};
  p.method = "minmax";
  return p;
}

QPoint dynamic_activation() {
  QPoint p;
  p.tensor = "x";
  p.role = Role::Activation;
  p.dynamic = true;
  p.dtype = ir::DType::U8;
  p.method = "dynamic";
  p.consumers = {"mm"};
  return p;
}

/// Every point of every quantize record in a committed state.
std::vector<json> state_points(const std::string& file) {
  std::ifstream in(test::source_dir() / "tests/data/states_v1" / file);
  const json state = json::parse(in);
  std::vector<json> out;
  for (const auto& st : state.at("stages"))
    if (st.value("pass", "") == "quantize" && st.contains("record") && st["record"].contains("points"))
      for (const auto& p : st["record"]["points"]) out.push_back(p);
  return out;
}

}  // namespace

TEST_CASE("quantize points: block-wise, 4-bit and dynamic forms round-trip through JSON") {
  const QPoint w = blockwise_int4_weight();
  const json wj = point_to_json(w);
  // Scales as the bytes of float32 little-endian values (0.5, 0.25, 0.125, 0.0625); zero points
  // omitted when all 0.
  CHECK(wj.dump() ==
        R"({"tensor":"W","role":"weight","dtype":"i4","axis":1,"block_size":32,"scale_count":4,)"
        R"("scale_f32_base64":"AAAAPwAAgD4AAAA+AACAPQ==","method":"minmax"})");
  const QPoint w2 = point_from_json(wj);
  CHECK(w2.dtype == ir::DType::I4);
  CHECK(w2.axis == 1);
  CHECK(w2.block_size == 32);
  CHECK(w2.scale == w.scale);
  CHECK(w2.zero_point == w.zero_point);
  CHECK(point_to_json(w2) == wj);

  const QPoint a = dynamic_activation();
  const json aj = point_to_json(a);
  CHECK(aj.dump() == R"({"tensor":"x","role":"activation","dynamic":true,"dtype":"u8","axis":null,"method":"dynamic","consumers":["mm"]})");
  const QPoint a2 = point_from_json(aj);
  CHECK(a2.dynamic);
  CHECK(a2.scale.empty());
  CHECK(a2.zero_point.empty());
  CHECK(point_to_json(a2) == aj);

  QPoint u4 = blockwise_int4_weight();
  u4.dtype = ir::DType::U4;
  u4.zero_point = {8, 8, 8, 15};
  u4.codes = std::string("\x12\x34", 2);  // recorded codes (GPTQ) travel as base64 too
  const QPoint u4b = point_from_json(point_to_json(u4));
  CHECK(u4b.zero_point == u4.zero_point);
  CHECK(u4b.codes == u4.codes);
  CHECK(point_to_json(u4b) == point_to_json(u4));
}

TEST_CASE("quantize points: malformed newer forms are ModelErrors") {
  json j = point_to_json(blockwise_int4_weight());
  j["scale_count"] = 5;  // the bytes hold 4 scales
  CHECK_THROWS_AS(point_from_json(j), ModelError);
  json neg = point_to_json(blockwise_int4_weight());
  neg["scale_f32_base64"] = "AAAAvwAAgD4AAAA+AACAPQ==";  // -0.5
  CHECK_THROWS_AS(point_from_json(neg), ModelError);
  json bad64 = point_to_json(blockwise_int4_weight());
  bad64["scale_f32_base64"] = "AAAA*wAAgD4AAAA+AACAPQ==";
  CHECK_THROWS_AS(point_from_json(bad64), ModelError);
  json b = point_to_json(blockwise_int4_weight());
  b["block_size"] = 0;
  CHECK_THROWS_AS(point_from_json(b), ModelError);
  json d = point_to_json(dynamic_activation());
  d["scale"] = 0.5;
  CHECK_THROWS_AS(point_from_json(d), ModelError);
  json dw = point_to_json(dynamic_activation());
  dw["role"] = "weight";
  CHECK_THROWS_AS(point_from_json(dw), ModelError);
}

TEST_CASE("quantize points: the committed states' points keep their JSON bytes") {
  for (const char* file : {"mnist_quantize.mcc.json", "mnist_quantize_16bit.mcc.json", "yolox_quantize.mcc.json"}) {
    const auto points = state_points(file);
    INFO(file);
    REQUIRE(!points.empty());
    for (const auto& j : points) {
      const QPoint p = point_from_json(j);
      CHECK_FALSE(p.dynamic);
      CHECK(p.block_size == 0);
      CHECK(point_to_json(p).dump() == j.dump());
    }
  }
  // A per-channel weight and a per-tensor activation written from scratch: the format as before.
  QPoint w;
  w.tensor = "W";
  w.role = Role::Weight;
  w.dtype = ir::DType::I8;
  w.axis = 0;
  w.scale = {0.5f, 0.25f};
  w.zero_point = {0, 0};
  w.lo = {-1, -2};
  w.hi = {1, 2};
  w.method = "minmax";
  CHECK(point_to_json(w).dump() ==
        R"({"tensor":"W","role":"weight","dtype":"i8","axis":0,"scale":[0.5,0.25],"zero_point":[0,0],)"
        R"("range":[[-1.0,1.0],[-2.0,2.0]],"method":"minmax"})");
  QPoint a;
  a.tensor = "x";
  a.scale = {0.5f};
  a.zero_point = {3};
  a.lo = {-1.5};
  a.hi = {126};
  a.method = "minmax";
  a.group = 0;
  CHECK(point_to_json(a).dump() ==
        R"({"tensor":"x","role":"activation","dtype":"u8","axis":null,"scale":0.5,"zero_point":3,)"
        R"("range":[-1.5,126.0],"method":"minmax","group":0})");
}

TEST_CASE("quantize points: apply_plan refuses a form it cannot write, before changing the model") {
  for (const QPoint& p : {blockwise_int4_weight()}) {  // blocks along axis 1 (N); dynamic points: dynamic_test.cpp
    ir::Model m = test::empty_model(13, 7);
    ir::Graph& g = *m.graph;
    ir::Value& x = test::add_input(g, "x", {2, 64});
    auto& mm = test::add_node(g, "MatMul", "mm", {&x, &test::add_random_init(g, "W", {64, 4}, 1)}, {"y"}, 13);
    test::mark_output(g, *mm.outputs[0]);
    transforms::quantize::Plan plan;
    plan.opset_from = 13;  // would be raised: the refusal comes first
    plan.opset_to = 21;
    plan.ir_from = 7;
    plan.ir_to = 10;
    plan.points = {p};
    const size_t nodes = g.nodes().size();
    try {
      transforms::quantize::apply_plan(m, plan);
      FAIL("apply_plan accepted " << p.tensor);
    } catch (const UnsupportedError& e) {
      const std::string msg = e.what();
      CHECK(msg.find('\n') == std::string::npos);
      CHECK(msg.find("'" + p.tensor + "'") != std::string::npos);
      CHECK(msg.find("cannot write") != std::string::npos);
    }
    CHECK(g.nodes().size() == nodes);
    CHECK(m.opset("") == 13);
    CHECK(m.ir_version == 7);
    CHECK(g.find_value("W")->initializer->dtype() == ir::DType::F32);
  }
  QPoint plain_int4;
  plain_int4.tensor = "W";
  plain_int4.role = Role::Weight;
  plain_int4.dtype = ir::DType::I4;
  plain_int4.scale = {0.1f};
  plain_int4.zero_point = {0};
  ir::Model m = test::empty_model(21, 10);
  test::add_random_init(*m.graph, "W", {4, 4}, 2);
  transforms::quantize::Plan plan;
  plan.opset_from = plan.opset_to = 21;
  plan.points = {plain_int4};
  CHECK_THROWS_AS(transforms::quantize::apply_plan(m, plan), UnsupportedError);
}
