// The precision class a model is judged by (judge::model_precision): QDQ, integer and ONNX
// Runtime's block-quantized ops make it int8 (so an int4 MatMulNBits LLM gets the int8/int4
// budgets, not fp32's), f16 values fp16, otherwise fp32.
#include <doctest/doctest.h>

#include "judge/verdict.h"
#include "support/graph_builder.h"

using namespace mcc;

namespace {

ir::Model one_node(const std::string& op, const std::string& domain, ir::DType dt) {
  ir::Model m = test::empty_model(17);
  m.opset_imports.push_back({"com.microsoft", 1});
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {2, 4}, dt);
  ir::Node& n = g.add_node(op, domain, "n", {&x}, {"y"});
  test::mark_output(g, *n.outputs[0], dt);
  return m;
}

}  // namespace

TEST_CASE("model_precision: MatMulNBits and GatherBlockQuantized are int8; f16 values fp16; else fp32") {
  CHECK(judge::model_precision(one_node("MatMulNBits", "com.microsoft", ir::DType::F32)) == "int8");
  CHECK(judge::model_precision(one_node("GatherBlockQuantized", "com.microsoft", ir::DType::F32)) == "int8");
  CHECK(judge::model_precision(one_node("DequantizeLinear", "", ir::DType::F32)) == "int8");
  CHECK(judge::model_precision(one_node("Relu", "", ir::DType::F16)) == "fp16");
  CHECK(judge::model_precision(one_node("Relu", "", ir::DType::F32)) == "fp32");
  CHECK(judge::default_rules("int8").sequence.max_perplexity_ratio == 1.3);
  CHECK(judge::default_rules("fp16").sequence.min_token_agreement == 0.95);
}
