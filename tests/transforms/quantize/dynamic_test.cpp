// quantize{mode=dynamic} on a transformer-shaped block (dynamic_block.h): which nodes become
// DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul (-> Add), the names kept, the record
// (dynamic activations with no scale, per-column weight scales), replay from the record with no
// data, per-tensor weights and rules, the stats, what stays float and why, and apply_plan's
// refusal of a dynamic point whose consumer has no weight point; embedding tables (on by default)
// gathered as int8 codes with a DequantizeLinear after the Gather, and records written before that
// form replaying in the old one.
#include <doctest/doctest.h>

#include <cmath>

#include "ir/errors.h"
#include "support/graph_builder.h"
#include "transforms/fp16/transformer_block.h"
#include "transforms/quantize/dynamic_block.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;
using mcc::test::cosine;
using json = nlohmann::ordered_json;

namespace {

std::vector<std::pair<std::string, backends::RValue>> feeds(uint32_t seed) { return test::dynamic_block_feeds(seed); }


const json* point(const json& rec, const std::string& tensor) {
  for (const auto& p : rec["points"])
    if (p["tensor"] == tensor) return &p;
  return nullptr;
}

}  // namespace

TEST_CASE("quantize mode=dynamic: MatMul/Gemm with int8 weights and run-time uint8 activations, names kept") {
  ir::Model m = test::dynamic_block();
  const auto want = test::run_cpu(m, feeds(1));
  const auto res = test::run_quantize(m, {{"mode", "dynamic"}, {"dynamic_activations", "per_tensor"}});
  const ir::Graph& g = *m.graph;
  CHECK(test::count_ops(m, "DynamicQuantizeLinear") == 3);  // x (read by proj_q and proj_k), h, z
  CHECK(test::count_ops(m, "MatMulInteger") == 4);
  CHECK(test::count_ops(m, "Cast") == 4);
  CHECK(test::count_ops(m, "MatMul") == 1);  // att: two activations
  CHECK(test::count_ops(m, "Gemm") == 0);
  CHECK(test::count_ops(m, "QuantizeLinear") == 0);
  CHECK(test::count_ops(m, "DequantizeLinear") == 0);
  CHECK(m.opset("") == 17);
  // Outputs keep their names; the Gemm's bias is added in float after the scales.
  for (const char* y : {"q", "k", "s", "Y2"}) {
    const ir::Value* v = g.find_value(y);
    REQUIRE(v != nullptr);
    REQUIRE(v->producer != nullptr);
    CHECK(v->producer->op_type == (std::string(y) == "Y2" ? "Add" : "Mul"));
  }
  CHECK(g.outputs[1]->name == "Y2");
  // Int8 weights: [K, N], the Gemm's transB weight stored transposed; the float weights are gone.
  for (const char* w : {"Wq", "Wk", "Wo", "Wg"}) CHECK(g.find_value(w) == nullptr);
  const ir::Value* wg = g.find_value("Wg_quantized");
  REQUIRE(wg != nullptr);
  CHECK(wg->initializer->dtype() == ir::DType::I8);
  CHECK(wg->initializer->dims() == std::vector<int64_t>{16, 8});
  CHECK(g.find_value("Wg_scale")->initializer->dims() == std::vector<int64_t>{8});
  CHECK(g.find_value("Wg_zero_point")->initializer->dtype() == ir::DType::I8);

  CHECK(res.stats["mode"] == "dynamic");
  CHECK(res.stats["layers_dynamic"] == 4);
  CHECK(res.stats["weights"] == 4);
  CHECK(res.stats["activations"] == 3);
  CHECK(res.stats["calibration_samples"] == 0);
  CHECK(res.record["mode"] == "dynamic");
  const json* px = point(res.record, "x");
  REQUIRE(px != nullptr);
  CHECK((*px)["dynamic"] == true);
  CHECK_FALSE(px->contains("scale"));
  CHECK((*px)["consumers"] == json::array({"proj_q", "proj_k"}));
  const json* pw = point(res.record, "Wg");
  REQUIRE(pw != nullptr);
  CHECK((*pw)["axis"] == 0);
  CHECK((*pw)["scale"].size() == 8);
  bool att_listed = false;
  for (const auto& s : res.record["skipped_nodes"])
    att_listed = att_listed || (s["node"] == "att" && s["reason"].get<std::string>().find("not a float32 constant") != std::string::npos);
  CHECK(att_listed);

  // Close to the float model on the cpu backend.
  const auto got = test::run_cpu(m, feeds(1));
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double c = cosine(got[i], want[i]);
    MESSAGE("output " << i << ": cosine vs float " << c);
    CHECK(c > 0.999);
  }

  // Replay from the record: the same graph, with no data.
  ir::Model again = test::dynamic_block();
  const json rec = res.record;
  const auto rr = test::run_quantize(again, {{"mode", "dynamic"}, {"dynamic_activations", "per_tensor"}}, &rec);
  CHECK(rr.stats == res.stats);
  CHECK(test::max_abs_diff(test::run_cpu(again, feeds(2)), test::run_cpu(m, feeds(2))) == 0.0);
  CHECK(test::count_ops(again, "MatMulInteger") == 4);
}

TEST_CASE("quantize mode=dynamic: per-tensor weights, rules and exclusions, Conv left float, opset raised to 11") {
  SUBCASE("per_channel=false: one scale per weight") {
    ir::Model m = test::dynamic_block();
    const auto res = test::run_quantize(m, {{"mode", "dynamic"}, {"per_channel", "false"}});
    CHECK(m.graph->find_value("Wq_scale")->initializer->rank() == 0);
    CHECK((*point(res.record, "Wq"))["axis"].is_null());
    CHECK(test::count_ops(m, "MatMulInteger") == 4);
  }
  SUBCASE("exclude and a skip rule keep layers float") {
    ir::Model m = test::dynamic_block();
    const auto res = test::run_quantize(m, {{"mode", "dynamic"}, {"exclude", "fc"}, {"rules", "proj_k:skip"}});
    CHECK(test::count_ops(m, "MatMulInteger") == 2);
    CHECK(test::count_ops(m, "Gemm") == 1);
    CHECK(res.stats["layers_dynamic"] == 2);
    CHECK((*point(res.record, "x"))["consumers"] == json::array({"proj_q"}));
    CHECK(m.graph->find_value("Wk") != nullptr);
  }
  SUBCASE("a Conv stays float with its reason; opset 10 is raised to 11") {
    ir::Model m = test::empty_model(10, 5);
    ir::Graph& g = *m.graph;
    ir::Value& x = test::add_input(g, "X", {1, 2, 4, 4});
    auto& conv = test::add_node(g, "Conv", "conv", {&x, &test::add_random_init(g, "Wc", {4, 2, 1, 1}, 3)}, {"c"}, 10);
    auto& flat = test::add_node(g, "Flatten", "flat", {conv.outputs[0]}, {"f"}, 10);
    auto& mm = test::add_node(g, "MatMul", "mm", {flat.outputs[0], &test::add_random_init(g, "Wm", {64, 3}, 4)}, {"Y"}, 10);
    test::mark_output(g, *mm.outputs[0]);
    const auto res = test::run_quantize(m, {{"mode", "dynamic"}});
    CHECK(test::count_ops(m, "Conv") == 1);
    CHECK(test::count_ops(m, "MatMulInteger") == 1);
    CHECK(m.opset("") == 11);
    CHECK(m.ir_version == 6);
    REQUIRE(res.record["skipped_nodes"].size() == 1);
    CHECK(res.record["skipped_nodes"][0]["node"] == "conv");
    CHECK(res.record["skipped_nodes"][0]["reason"] == "mode=dynamic quantizes MatMul and Gemm only");
    CHECK(test::run_cpu(m, test::random_feeds(m, 5)).at(0).dims() == std::vector<int64_t>{1, 3});
  }
  SUBCASE("options that need calibration are refused") {
    ir::Model m = test::dynamic_block();
    CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "dynamic"}, {"activation_type", "int8"}}), UsageError);
    CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "dynamic"}, {"method", "auto"}}), UsageError);
    CHECK(test::count_ops(m, "MatMulInteger") == 0);
  }
}

TEST_CASE("quantize mode=dynamic: apply_plan refuses a dynamic point whose consumer has no weight point") {
  ir::Model m = test::empty_model(13, 7);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {2, 64});
  auto& mm = test::add_node(g, "MatMul", "mm", {&x, &test::add_random_init(g, "W", {64, 4}, 1)}, {"y"}, 13);
  test::mark_output(g, *mm.outputs[0]);
  transforms::quantize::QPoint p;
  p.tensor = "x";
  p.dynamic = true;
  p.method = "dynamic";
  p.consumers = {"mm"};
  transforms::quantize::Plan plan;
  plan.opset_from = plan.opset_to = 13;
  plan.ir_from = plan.ir_to = 7;
  plan.points = {p};
  try {
    transforms::quantize::apply_plan(m, plan);
    FAIL("apply_plan accepted a dynamic point with no weight point");
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find("'x'") != std::string::npos);
    CHECK(msg.find("no weight point") != std::string::npos);
  }
  plan.points[0].consumers = {"nothing"};
  ir::Model m2 = test::empty_model(13, 7);
  ir::Value& x2 = test::add_input(*m2.graph, "x", {2, 64});
  test::mark_output(*m2.graph, *test::add_node(*m2.graph, "Relu", "r", {&x2}, {"y"}, 13).outputs[0]);
  CHECK_THROWS_AS(transforms::quantize::apply_plan(m2, plan), ModelError);
}

TEST_CASE("quantize mode=dynamic: the Gather table becomes int8 per column; the Gather reads the codes, a DequantizeLinear follows") {
  ir::Model m = test::transformer_block();
  const auto want = test::run_cpu(m, test::transformer_block_feeds());
  const auto res = test::run_quantize(m, {{"mode", "dynamic"}});  // embeddings=true by default
  CHECK(res.stats["embedding_tables"] == 1);
  CHECK(res.stats["layers_dynamic"] == 2);
  CHECK(m.graph->find_value("E") == nullptr);  // the float table is gone
  const ir::Value* eq = m.graph->find_value("E_quantized");
  REQUIRE(eq != nullptr);
  CHECK(eq->initializer->dtype() == ir::DType::I8);
  CHECK(eq->initializer->dims() == std::vector<int64_t>{test::kVocab, test::kHidden});
  // tok = DequantizeLinear(Gather(E_quantized, ids), E_scale, E_zero_point, axis=2): ids is [1, kSeq].
  const ir::Value* tok = m.graph->find_value("tok");
  REQUIRE(tok != nullptr);
  REQUIRE(tok->producer != nullptr);
  const ir::Node& dq = *tok->producer;
  CHECK(dq.op_type == "DequantizeLinear");
  CHECK(dq.attr_int("axis", -1) == 2);
  CHECK(dq.inputs[1]->name == "E_scale");
  CHECK(m.graph->find_value("E_scale")->initializer->dims() == std::vector<int64_t>{test::kHidden});
  const ir::Node* gather = dq.inputs[0]->producer;
  REQUIRE(gather != nullptr);
  CHECK(gather->op_type == "Gather");
  CHECK(gather->name == "embed");
  CHECK(gather->inputs[0] == eq);
  CHECK(dq.inputs[0]->dtype == ir::DType::I8);
  const json* pe = point(res.record, "E");
  REQUIRE(pe != nullptr);
  CHECK((*pe)["gathered"] == true);
  CHECK((*pe)["consumers"] == json::array({"embed"}));
  const auto got = test::run_cpu(m, test::transformer_block_feeds());
  for (size_t i = 0; i < got.size(); ++i) CHECK(cosine(got[i], want[i]) > 0.999);
  // The gathered rows are exactly the rows of the table the old form dequantized whole: a record
  // without "gathered" (states written before it) replays in that form, with the same numbers.
  json old_form = res.record;
  for (auto& p : old_form["points"]) p.erase("gathered");
  ir::Model before = test::transformer_block();
  test::run_quantize(before, {{"mode", "dynamic"}}, &old_form);
  const ir::Value* e = before.graph->find_value("E");
  REQUIRE(e != nullptr);
  REQUIRE(e->producer != nullptr);
  CHECK(e->producer->op_type == "DequantizeLinear");
  CHECK(e->producer->attr_int("axis", -1) == 1);
  CHECK(test::max_abs_diff(test::run_cpu(before, test::transformer_block_feeds()), got) == 0.0);
  // embeddings=false keeps the table float (static mode: static_embedding_test.cpp).
  ir::Model plain = test::transformer_block();
  CHECK(test::run_quantize(plain, {{"mode", "dynamic"}, {"embeddings", "false"}}).stats["embedding_tables"] == 0);
  CHECK(plain.graph->find_value("E")->initializer);
}

TEST_CASE("quantize mode=dynamic: per-tensor embedding tables dequantize the gathered rows with one scale") {
  ir::Model m = test::transformer_block();
  const auto res = test::run_quantize(m, {{"mode", "dynamic"}, {"per_channel", "false"}});
  CHECK(res.stats["embedding_tables"] == 1);
  const ir::Node& dq = *m.graph->find_value("tok")->producer;
  CHECK(dq.op_type == "DequantizeLinear");
  CHECK_FALSE(dq.has_attr("axis"));
  CHECK(dq.inputs[1]->initializer->rank() == 0);
  CHECK(dq.inputs[0]->producer->op_type == "Gather");
}

TEST_CASE("quantize mode=dynamic: a MatMul reading a GELU output keeps a float input, its weight int8 per channel") {
  // test::feed_forward_block: proj, and up -> GELU (the exported erf form) -> down.
  ir::Model m = test::feed_forward_block();
  const auto res = test::run_quantize(m, {{"mode", "dynamic"}, {"dynamic_activations", "per_tensor"}});
  CHECK(res.stats["layers_dynamic"] == 2);
  CHECK(res.stats["layers_float_input"] == 1);
  CHECK(test::count_ops(m, "MatMulInteger") == 2);  // proj, up
  CHECK(test::count_ops(m, "MatMul") == 1);         // down, reading the float GELU output
  const ir::Value* w2 = m.graph->find_value("W2");
  REQUIRE(w2 != nullptr);
  REQUIRE(w2->producer != nullptr);
  CHECK(w2->producer->op_type == "DequantizeLinear");
  CHECK(w2->producer->attr_int("axis", -1) == 1);
  CHECK(m.graph->find_value("W2_quantized")->initializer->dtype() == ir::DType::I8);
  const json* pw = point(res.record, "W2");
  REQUIRE(pw != nullptr);
  CHECK((*pw)["note"].get<std::string>().find("GELU") != std::string::npos);
  CHECK((*pw)["consumers"] == json::array({"down"}));
  // Replay: the same graph with no data.
  ir::Model again = test::feed_forward_block();
  const json rec = res.record;
  test::run_quantize(again, {{"mode", "dynamic"}, {"dynamic_activations", "per_tensor"}}, &rec);
  CHECK(test::max_abs_diff(test::run_cpu(again, test::random_feeds(again, 3)), test::run_cpu(m, test::random_feeds(m, 3))) == 0.0);
  // float_gelu_inputs=false: all three layers (proj, up, down) are quantized at run time.
  ir::Model off = test::feed_forward_block();
  CHECK(test::run_quantize(off, {{"mode", "dynamic"}, {"dynamic_activations", "per_tensor"}, {"float_gelu_inputs", "false"}})
            .stats["layers_dynamic"] == 3);
  CHECK(test::count_ops(off, "MatMulInteger") == 3);
  // Per-token ranges (the default puts them on both of these feed-forward activations) need no
  // float island: all three layers run at run time.
  ir::Model tok = test::feed_forward_block();
  CHECK(test::run_quantize(tok, {{"mode", "dynamic"}}).stats["layers_dynamic"] == 3);
  CHECK(test::count_ops(tok, "MatMulInteger") == 3);
}
