// quantize{mode=weight_only bits=4 lm_head_block_size=32} (quantize/weight_only.h): the MatMul
// writing an output named like causal-LM logits takes 4-bit blocks of 32 while the other layers
// keep block_size; lm_head_block_size=0 turns it off; the record lists the weight.
#include <doctest/doctest.h>

#include <string>

#include "support/graph_builder.h"
#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;

namespace {

/// x[2, 4, 128] -> MatMul hidden (W1[128, 128]) -> h -> MatMul lm_head (W2[128, 64]) -> "Logits"
ir::Model lm_block() {
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {2, 4, 128});
  auto& h = test::add_node(g, "MatMul", "hidden", {&x, &test::add_random_init(g, "W1", {128, 128}, 41)}, {"h"}, 17);
  auto& y = test::add_node(g, "MatMul", "lm_head", {h.outputs[0], &test::add_random_init(g, "W2", {128, 64}, 42)},
                           {"Logits"}, 17);
  test::mark_output(g, *y.outputs[0]);
  return m;
}

/// The block_size of the DequantizeLinear whose output the MatMul `reader` reads as its weight.
int64_t weight_block(const ir::Model& m, const std::string& reader) {
  for (const ir::Node* n : m.graph->nodes())
    if (n->name == reader && n->input(1)->producer && n->input(1)->producer->is("DequantizeLinear"))
      return n->input(1)->producer->attr_int("block_size", 0);
  return -1;
}

}  // namespace

TEST_CASE("quantize weight_only: the layer writing logits takes 4-bit blocks of lm_head_block_size") {
  ir::Model m = lm_block();
  const auto r = test::run_quantize(m, {{"mode", "weight_only"}, {"block_size", "128"}});
  CHECK(weight_block(m, "lm_head") == 32);
  CHECK(weight_block(m, "hidden") == 128);
  REQUIRE(r.record.contains("lm_head_block_size"));
  CHECK(r.record["lm_head_block_size"]["block_size"] == 32);
  CHECK(r.record["lm_head_block_size"]["weights"] == nlohmann::ordered_json::array({"W2"}));

  ir::Model off = lm_block();
  const auto r0 = test::run_quantize(off, {{"mode", "weight_only"}, {"block_size", "128"}, {"lm_head_block_size", "0"}});
  CHECK(weight_block(off, "lm_head") == 128);
  CHECK_FALSE(r0.record.contains("lm_head_block_size"));

  ir::Model bad = lm_block();
  CHECK_THROWS_AS(test::run_quantize(bad, {{"mode", "weight_only"}, {"lm_head_block_size", "24"}}), UsageError);
}
