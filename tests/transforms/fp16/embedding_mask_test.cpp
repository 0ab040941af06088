// Tests of the fp16 stage on a transformer-shaped block (tests/transforms/fp16/transformer_block.h):
// the embedding table read by a Gather is converted (reason "embedding", half the bytes), the
// LayerNormalization and Softmax stay float32, an attention-mask fill of -3.4e38 is clamped to
// -65504 with a record, stats and no silent change, a -10000 mask converts as it is, and the
// options convert_embeddings=false and out_of_range=keep_fp32 keep the float32 behaviour.
#include <doctest/doctest.h>

#include <cmath>

#include "transforms/fp16/fp16.h"
#include "transforms/fp16/fp16_test_util.h"
#include "transforms/fp16/transformer_block.h"

namespace mcc {
namespace {

using test::run_fp16;

const nlohmann::ordered_json* decision(const transforms::PassResult& r, const std::string& node) {
  for (const auto& d : r.record["nodes"])
    if (d["node"] == node) return &d;
  return nullptr;
}

std::vector<float> floats(const ir::Tensor& t) {
  std::vector<float> out;
  if (t.dtype() == ir::DType::F32)
    for (float x : t.data<float>()) out.push_back(x);
  else
    for (f16 x : t.data<f16>()) out.push_back(static_cast<float>(x));
  return out;
}

}  // namespace

TEST_CASE("fp16 converts a Gather's embedding table and clamps a -3.4e38 mask fill with a record") {
  ir::Model m = test::transformer_block();
  const auto feeds = test::transformer_block_feeds();
  const auto before = test::run_cpu(m, feeds);
  const int64_t table_bytes = static_cast<int64_t>(m.graph->find_value("E")->initializer->bytes().size());

  auto r = run_fp16(m);
  // The table: float16 in place, half the bytes; the Gather runs low.
  const ir::Value* e = m.graph->find_value("E");
  REQUIRE(e->initializer);
  CHECK(e->initializer->dtype() == ir::DType::F16);
  CHECK(static_cast<int64_t>(e->initializer->bytes().size()) * 2 == table_bytes);
  REQUIRE(decision(r, "embed") != nullptr);
  CHECK((*decision(r, "embed"))["dtype"] == "f16");
  CHECK((*decision(r, "embed"))["reason"] == "embedding");
  CHECK(m.graph->find_value("tok")->dtype == ir::DType::F16);
  CHECK((*decision(r, "add_pos"))["dtype"] == "f16");  // word + position embeddings add in fp16
  CHECK(m.graph->find_value("P")->initializer->dtype() == ir::DType::F16);
  // Accumulating ops stay float32.
  CHECK((*decision(r, "ln"))["dtype"] == "f32");
  CHECK((*decision(r, "ln"))["reason"] == "fp32_op");
  CHECK((*decision(r, "softmax_big"))["dtype"] == "f32");
  CHECK((*decision(r, "softmax_small"))["dtype"] == "f32");

  // The -3.4e38 fill: clamped to -65504 and recorded (record, stats); the mask Add runs low.
  CHECK((*decision(r, "mask_big"))["dtype"] == "f16");
  const ir::Tensor& mb = *m.graph->find_value("M_big")->initializer;
  CHECK(mb.dtype() == ir::DType::F16);
  int clamped_values = 0;
  for (float x : floats(mb)) {
    CHECK(std::isfinite(x));
    clamped_values += x == -65504.0f;
  }
  CHECK(clamped_values == test::kMaskedKeys * test::kSeq);
  REQUIRE(r.record["clamped"].size() == 1);
  const auto& c = r.record["clamped"][0];
  CHECK(c["tensor"] == "M_big");
  CHECK(c["count"] == test::kMaskedKeys * test::kSeq);
  CHECK(c["from"].get<double>() == doctest::Approx(-3.4e38).epsilon(1e-6));
  CHECK(c["to"].get<double>() == -65504.0);
  CHECK(r.stats["values_saturated"] == test::kMaskedKeys * test::kSeq);
  CHECK(r.stats["constants_clamped"] == 1);
  CHECK(r.stats["values_out_of_range"] == test::kMaskedKeys * test::kSeq);
  bool reported = false;
  for (const auto& o : r.record["out_of_range"]) reported = reported || (o["value"] == "M_big" && o["action"] == "clamped");
  CHECK(reported);

  // The -10000 mask (a Constant node) fits: converted unchanged, nothing clamped.
  CHECK((*decision(r, "mask_small"))["dtype"] == "f16");
  const ir::Node* mc = m.graph->find_value("M_small")->producer;
  REQUIRE(mc != nullptr);
  REQUIRE(mc->attr_tensor("value") != nullptr);
  CHECK(mc->attr_tensor("value")->dtype() == ir::DType::F16);
  CHECK(floats(*mc->attr_tensor("value"))[test::kSeq - 1] == -10000.0f);

  CHECK_NOTHROW(ir::verify(m));
  // Softmax rows: masked keys get 0 exactly, the rest within fp16 tolerance of float32.
  const auto after = test::run_cpu(m, feeds);
  CHECK(test::max_abs_diff(after, before) < 2e-3);
  for (float x : after[0].data<float>()) CHECK(std::isfinite(x));

  // Replay of the record: same decisions, same bytes, the clamp reported again.
  nlohmann::ordered_json rec = r.record;
  ir::Model again = test::transformer_block();
  auto r2 = run_fp16(again, {}, &rec);
  CHECK(r2.record["nodes"] == r.record["nodes"]);
  CHECK(r2.record["clamped"] == r.record["clamped"]);
  CHECK(ir::serialize_model(again) == ir::serialize_model(m));
}

TEST_CASE("fp16 out_of_range=keep_fp32 keeps the -3.4e38 mask and its Add in float32") {
  ir::Model m = test::transformer_block();
  auto r = run_fp16(m, {{"out_of_range", "keep_fp32"}});
  CHECK(m.graph->find_value("M_big")->initializer->dtype() == ir::DType::F32);
  CHECK(m.graph->find_value("M_big")->initializer->data<float>()[test::kSeq - 1] == -3.4e38f);
  CHECK((*decision(r, "mask_big"))["dtype"] == "f32");
  CHECK((*decision(r, "mask_big"))["reason"] == "out_of_range");
  CHECK((*decision(r, "mask_big"))["detail"] == "M_big");
  CHECK(r.record["clamped"].empty());
  CHECK(r.stats["values_saturated"] == 0);
  CHECK(r.stats["values_out_of_range"] == test::kMaskedKeys * test::kSeq);
  CHECK(m.graph->find_value("E")->initializer->dtype() == ir::DType::F16);  // the table still converts
}

TEST_CASE("fp16 clamp_masks keeps a constant with a trained-size outlier in float32") {
  // 1e5 is beyond fp16 but not a mask fill (|x| < 1e6): its consumers stay float32.
  ir::Model m = test::transformer_block(/*fill=*/-1e5f);
  auto r = run_fp16(m);
  CHECK(m.graph->find_value("M_big")->initializer->dtype() == ir::DType::F32);
  CHECK((*decision(r, "mask_big"))["reason"] == "out_of_range");
  CHECK(r.record["clamped"].empty());
}

TEST_CASE("fp16 convert_embeddings=false leaves the table in float32") {
  ir::Model m = test::transformer_block();
  auto r = run_fp16(m, {{"convert_embeddings", "false"}});
  CHECK(m.graph->find_value("E")->initializer->dtype() == ir::DType::F32);
  // Without the rule the Gather follows its consumers, and the Add with the position embeddings
  // runs in float32 (its dynamic input is float32 when it is decided).
  CHECK((*decision(r, "embed"))["dtype"] == "f32");
  CHECK((*decision(r, "embed"))["reason"] == "widest");
  CHECK((*decision(r, "add_pos"))["dtype"] == "f32");
}

TEST_CASE("fp16 dtype=bf16 converts the embedding table to bfloat16") {
  ir::Model m = test::transformer_block();
  const auto feeds = test::transformer_block_feeds();
  const auto before = test::run_cpu(m, feeds);
  auto r = run_fp16(m, {{"dtype", "bf16"}});
  CHECK(m.graph->find_value("E")->initializer->dtype() == ir::DType::BF16);
  CHECK((*decision(r, "embed"))["dtype"] == "bf16");
  // float32's lowest overflows bfloat16 as well (it rounds up to -inf): clamped to bf16's largest.
  REQUIRE(r.record["clamped"].size() == 1);
  CHECK(r.record["clamped"][0]["to"].get<double>() == doctest::Approx(-3.3895313892515355e38));
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::max_abs_diff(test::run_cpu(m, feeds), before) < 2e-2);
}

TEST_CASE("fp16 converts GatherElements and GatherND tables read with run-time indices") {
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& idx = test::add_input(g, "I", {2, 3}, ir::DType::I64);
  ir::Value& idx_nd = test::add_input(g, "J", {2, 1}, ir::DType::I64);
  auto& ge = test::add_node(g, "GatherElements", "ge", {&test::add_random_init(g, "T1", {4, 3}, 5), &idx}, {"a"}, 17,
                            {test::attr_i("axis", 0)});
  auto& gn = test::add_node(g, "GatherND", "gn", {&test::add_random_init(g, "T2", {4, 3}, 6), &idx_nd}, {"b"}, 17);
  auto& add = test::add_node(g, "Add", "sum", {ge.outputs[0], gn.outputs[0]}, {"Y"}, 17);
  test::mark_output(g, *add.outputs[0]);
  auto r = run_fp16(m);
  CHECK(g.find_value("T1")->initializer->dtype() == ir::DType::F16);
  CHECK(g.find_value("T2")->initializer->dtype() == ir::DType::F16);
  CHECK((*decision(r, "ge"))["reason"] == "embedding");
  CHECK((*decision(r, "gn"))["reason"] == "embedding");
  CHECK((*decision(r, "sum"))["dtype"] == "f16");
  CHECK(test::count_ops(m, "Cast") == 1);  // Y back to float32 (keep_io)
  CHECK_NOTHROW(ir::verify(m));
}

}  // namespace mcc
