// Tests of the fp16 stage (transforms/fp16/fp16.cpp): it fires, the structure it leaves (Casts
// only at dtype boundaries, initializer dtypes), numerics against the float32 model on the cpu
// Executor with float16/bfloat16 tolerances, idempotence, replay, and the negative cases.
#include <doctest/doctest.h>

#include <onnx/defs/parser.h>

#include <cmath>
#include <random>

#include "backends/executor.h"
#include "ir/errors.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"
#include "transforms/fp16/fp16.h"
#include "transforms/fp16/fp16_test_util.h"

namespace mcc {
namespace {

ir::Model parse_model(const char* text) {
  onnx::ModelProto mp;
  const auto st = onnx::OnnxParser::Parse(mp, text);
  REQUIRE_MESSAGE(st.IsOK(), st.ErrorMessage());
  std::string bytes;
  REQUIRE(mp.SerializeToString(&bytes));
  return ir::load_model_from_bytes(std::move(bytes), "");
}

using test::run_fp16;

int count_ops(const ir::Model& m, std::string_view op) {
  int n = 0;
  ir::for_each_graph(*m.graph, [&](ir::Graph& g) {
    for (const ir::Node* x : g.nodes()) n += x->op_type == op;
  });
  return n;
}

const ir::Value* value(const ir::Model& m, std::string_view name) { return m.graph->find_value(name); }

std::vector<float> as_floats(const ir::Tensor& t) {
  std::vector<float> out;
  if (t.dtype() == ir::DType::F32)
    for (float x : t.data<float>()) out.push_back(x);
  else if (t.dtype() == ir::DType::F16)
    for (f16 x : t.data<f16>()) out.push_back(static_cast<float>(x));
  else if (t.dtype() == ir::DType::BF16)
    for (bf16 x : t.data<bf16>()) out.push_back(static_cast<float>(x));
  return out;
}

/// Runs the model's first output on a seeded input for its first graph input (given shape).
std::vector<float> run_cpu(const ir::Model& m, const std::vector<int64_t>& dims, ir::DType in_dtype = ir::DType::F32) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(ir::checked_numel(dims)));
  for (auto& v : x) v = u(rng);
  ir::Tensor t = ir::Tensor::from_vector<float>(dims, x);
  if (in_dtype == ir::DType::F16) {
    std::vector<f16> h;
    for (float v : x) h.push_back(static_cast<f16>(v));
    t = ir::Tensor::from_vector<f16>(dims, h);
  }
  backends::ExecOptions eo;
  eo.threads = 1;
  backends::Executor ex(m, eo);
  auto outs = ex.run({{m.graph->inputs[0]->name, backends::RValue::of(t)}});
  return as_floats(outs[0].tensor);
}

/// Largest |a-b| / (atol + rtol |b|); <= 1 means close.
double close_ratio(const std::vector<float>& a, const std::vector<float>& b, double atol, double rtol) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]) / (atol + rtol * std::fabs(double(b[i]))));
  return worst;
}

// Conv -> Relu -> Flatten -> Softmax: Conv/Relu/Flatten convert, Softmax stays float32.
constexpr const char* kConvSoftmax = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] X) => (float[1,48] Y)
<float[3,2,3,3] W = {0.1,-0.2,0.3,0.05,0.4,-0.5,0.6,0.7,-0.1,0.2,0.25,-0.3,0.12,0.13,-0.14,0.15,0.16,0.17,
                     -0.1,0.2,-0.3,0.4,-0.5,0.6,-0.7,0.8,-0.9,0.1,0.11,0.12,0.13,0.14,0.15,0.16,0.17,0.18,
                     0.3,0.2,0.1,0.0,-0.1,-0.2,-0.3,-0.4,-0.5,0.5,0.4,0.3,0.2,0.1,0.0,-0.1,-0.2,-0.3},
 float[3] B = {0.01, -0.02, 0.03}>
{
  C = Conv <pads = [1,1,1,1]> (X, W, B)
  R = Relu (C)
  F = Flatten (R)
  Y = Softmax <axis = 1> (F)
}
)";

TEST_CASE("fp16 converts Conv/Relu, keeps Softmax in fp32, casts only at the boundaries") {
  ir::Model m = parse_model(kConvSoftmax);
  const auto before = run_cpu(m, {1, 2, 4, 4});
  auto r = run_fp16(m);

  CHECK(r.modified);
  CHECK(count_ops(m, "Cast") == 2);  // X -> f16 before Conv, f16 -> f32 before Softmax
  CHECK(value(m, "W")->initializer->dtype() == ir::DType::F16);
  CHECK(value(m, "B")->initializer->dtype() == ir::DType::F16);
  CHECK(value(m, "C")->dtype == ir::DType::F16);
  CHECK(value(m, "F")->dtype == ir::DType::F16);
  CHECK(m.graph->inputs[0]->name == "X");
  CHECK(m.graph->inputs[0]->dtype == ir::DType::F32);
  CHECK(m.graph->outputs[0]->name == "Y");
  CHECK(m.graph->outputs[0]->dtype == ir::DType::F32);
  CHECK(r.stats["nodes_low"] == 3);
  CHECK(r.stats["casts_inserted"] == 2);
  CHECK(r.stats["initializers_converted"] == 2);
  REQUIRE(r.record["nodes"].size() == 4);
  CHECK(r.record["nodes"][0]["op"] == "Conv");
  CHECK(r.record["nodes"][0]["dtype"] == "f16");
  CHECK(r.record["nodes"][0]["reason"] == "fp16_op");
  CHECK(r.record["nodes"][3]["op"] == "Softmax");
  CHECK(r.record["nodes"][3]["dtype"] == "f32");
  CHECK(r.record["nodes"][3]["reason"] == "fp32_op");
  CHECK_NOTHROW(ir::verify(m));

  const auto after = run_cpu(m, {1, 2, 4, 4});
  CHECK(close_ratio(after, before, 1e-3, 1e-2) <= 1.0);

  auto again = run_fp16(m);  // idempotent
  CHECK_FALSE(again.modified);
  CHECK(count_ops(m, "Cast") == 2);
}

TEST_CASE("fp16 output is type-correct for ONNX shape inference after a save") {
  ir::Model m = parse_model(kConvSoftmax);
  run_fp16(m);
  onnx::ModelProto mp;
  REQUIRE(mp.ParseFromString(ir::serialize_model(m)));
  // The exported value types agree with what the Casts and converted nodes produce.
  int f16_types = 0;
  for (const auto& n : mp.graph().node())
    if (n.op_type() == "Cast") CHECK((n.attribute(0).i() == 10 || n.attribute(0).i() == 1));
  for (const auto& init : mp.graph().initializer()) f16_types += init.data_type() == 10;
  CHECK(f16_types == 2);
}

TEST_CASE("fp16 keep_io=false retypes graph inputs and outputs") {
  ir::Model m = parse_model(kConvSoftmax);
  const auto before = run_cpu(m, {1, 2, 4, 4});
  auto r = run_fp16(m, {{"keep_io", "false"}});
  CHECK(r.modified);
  CHECK(m.graph->inputs[0]->dtype == ir::DType::F16);
  CHECK(m.graph->outputs[0]->dtype == ir::DType::F16);
  CHECK(m.graph->outputs[0]->name == "Y");
  CHECK(count_ops(m, "Cast") == 2);  // f16 -> f32 before Softmax, f32 -> f16 after it
  CHECK(r.stats["io_retyped"] == 2);
  CHECK_NOTHROW(ir::verify(m));
  const auto after = run_cpu(m, {1, 2, 4, 4}, ir::DType::F16);
  CHECK(close_ratio(after, before, 1e-3, 1e-2) <= 1.0);
  CHECK_FALSE(run_fp16(m, {{"keep_io", "false"}}).modified);
}

TEST_CASE("fp16 exclude keeps the named node and its weights in fp32") {
  ir::Model m = parse_model(kConvSoftmax);
  auto r = run_fp16(m, {{"exclude", "C"}});  // matched through the node's output name
  CHECK_FALSE(r.modified);  // Conv excluded: nothing else has a reason to change
  CHECK(value(m, "W")->initializer->dtype() == ir::DType::F32);
  CHECK(value(m, "C")->dtype != ir::DType::F16);  // undeclared intermediates keep their (unset) dtype
  // Relu and Flatten follow their float32 input (widest); nothing is low, no Cast is needed.
  CHECK(count_ops(m, "Cast") == 0);
  CHECK(r.record["nodes"][0]["reason"] == "excluded");
  CHECK(r.record["exclude_matches"]["C"] == 1);
}

TEST_CASE("fp16 exclude by regex, and a rule that matches nothing is a usage error") {
  ir::Model m = parse_model(kConvSoftmax);
  auto r = run_fp16(m, {{"exclude", "^[CR]$"}});
  CHECK(r.record["exclude_matches"]["^[CR]$"] == 2);
  CHECK(value(m, "C")->dtype != ir::DType::F16);
  CHECK(value(m, "F")->dtype != ir::DType::F16);

  ir::Model m2 = parse_model(kConvSoftmax);
  CHECK_THROWS_AS(run_fp16(m2, {{"exclude", "conv_does_not_exist"}}), UsageError);
}

TEST_CASE("fp16 options: unknown ops and contradicting lists are usage errors") {
  ir::Model m = parse_model(kConvSoftmax);
  CHECK_THROWS_AS(run_fp16(m, {{"fp32_ops", "Softmx"}}), UsageError);
  CHECK_THROWS_AS(run_fp16(m, {{"fp32_ops", "Relu"}, {"fp16_ops", "Relu"}}), UsageError);
  CHECK_THROWS_AS(run_fp16(m, {{"conditional_fp32", "Resize:mode"}}), UsageError);
  CHECK(count_ops(m, "Cast") == 0);  // nothing was touched
}

TEST_CASE("fp16 fp32_ops keeps a listed op in fp32 with Casts around it") {
  ir::Model m = parse_model(kConvSoftmax);
  const auto before = run_cpu(m, {1, 2, 4, 4});
  auto r = run_fp16(m, {{"fp32_ops", "Relu"}});
  CHECK(value(m, "C")->dtype == ir::DType::F16);
  CHECK(value(m, "R")->dtype != ir::DType::F16);
  CHECK(value(m, "F")->dtype != ir::DType::F16);  // Flatten follows its float32 input
  CHECK(count_ops(m, "Cast") == 2);               // X -> f16, C -> f32
  CHECK(r.record["nodes"][1]["reason"] == "fp32_ops_option");
  CHECK(close_ratio(run_cpu(m, {1, 2, 4, 4}), before, 1e-3, 1e-2) <= 1.0);
}

// Conv -> Resize: X converts with the Conv output; Resize `scales` is tensor(float) in the
// schema and stays float32.
constexpr const char* kResize = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,1,3,3] X) => (float[1,1,6,6] Y)
<float[1,1,1,1] W = {0.5}, float[0] roi = {}, float[4] scales = {1.0, 1.0, 2.0, 2.0}>
{
  C = Conv (X, W)
  Y = Resize <mode = "nearest"> (C, roi, scales)
}
)";

TEST_CASE("fp16 leaves Resize scales in fp32 (from the schema) and converts the data") {
  ir::Model m = parse_model(kResize);
  const auto before = run_cpu(m, {1, 1, 3, 3});
  auto r = run_fp16(m);
  CHECK(r.modified);
  CHECK(value(m, "scales")->initializer->dtype() == ir::DType::F32);
  CHECK(value(m, "roi")->initializer->dtype() == ir::DType::F16);  // roi shares T2, converted offline
  const ir::Node* resize = m.graph->outputs[0]->producer;
  REQUIRE(resize != nullptr);
  // Y is a graph output: Resize writes a renamed f16 value and a Cast restores float32 as "Y".
  CHECK(resize->op_type == "Cast");
  CHECK(resize->inputs[0]->producer->op_type == "Resize");
  CHECK(resize->inputs[0]->dtype == ir::DType::F16);
  CHECK(resize->inputs[0]->producer->inputs[2]->name == "scales");
  CHECK(m.graph->outputs[0]->name == "Y");
  CHECK_NOTHROW(ir::verify(m));
  CHECK(close_ratio(run_cpu(m, {1, 1, 3, 3}), before, 1e-3, 1e-2) <= 1.0);
  CHECK_FALSE(run_fp16(m).modified);
}

// MatMul with a weight beyond the float16 range.
constexpr const char* kBigWeight = R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2,3] X) => (float[2,2] Y)
<float[3,2] W = {100000.0, 0.5, -0.25, 1.0, 0.125, -2.0}>
{
  M = MatMul (X, W)
  Y = Relu (M)
}
)";

TEST_CASE("fp16 reports an out-of-range initializer and keeps its consumer in fp32 (never clamps)") {
  ir::Model m = parse_model(kBigWeight);
  const auto before = run_cpu(m, {2, 3});
  auto r = run_fp16(m);
  const ir::Tensor& w = *value(m, "W")->initializer;
  CHECK(w.dtype() == ir::DType::F32);
  CHECK(w.data<float>()[0] == 100000.0f);  // not clamped
  CHECK(r.stats["values_out_of_range"] == 1);
  CHECK(r.stats["values_saturated"] == 0);
  REQUIRE(r.record["out_of_range"].size() == 1);
  CHECK(r.record["out_of_range"][0]["value"] == "W");
  CHECK(r.record["out_of_range"][0]["overflow"] == 1);
  CHECK(r.record["out_of_range"][0]["action"] == "kept_fp32");
  CHECK(r.record["nodes"][0]["reason"] == "out_of_range");
  CHECK(count_ops(m, "Cast") == 0);
  CHECK(close_ratio(run_cpu(m, {2, 3}), before, 1e-6, 1e-6) <= 1.0);  // unchanged numerics
}

TEST_CASE("fp16 out_of_range=saturate converts and counts the saturated values") {
  ir::Model m = parse_model(kBigWeight);
  auto r = run_fp16(m, {{"out_of_range", "saturate"}});
  const ir::Tensor& w = *value(m, "W")->initializer;
  CHECK(w.dtype() == ir::DType::F16);
  CHECK(static_cast<float>(w.data<f16>()[0]) == 65504.0f);
  CHECK(r.stats["values_saturated"] == 1);
  CHECK(r.record["out_of_range"][0]["action"] == "saturated");
  CHECK(value(m, "M")->dtype == ir::DType::F16);
}

// One weight read by a converted MatMul and by an Exp kept in fp32: two copies, no runtime Cast.
constexpr const char* kShared = R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2,2] X) => (float[2,2] Y, float[2,2] Z)
<float[2,2] W = {0.5, -1.0, 0.25, 2.0}>
{
  Y = MatMul (X, W)
  Z = Exp (W)
}
)";

TEST_CASE("fp16 gives a weight shared by fp16 and fp32 consumers two copies") {
  ir::Model m = parse_model(kShared);
  auto r = run_fp16(m);
  CHECK(r.stats["initializers_copied"] == 1);
  CHECK(value(m, "W")->initializer->dtype() == ir::DType::F32);
  REQUIRE(value(m, "W_fp16") != nullptr);
  CHECK(value(m, "W_fp16")->initializer->dtype() == ir::DType::F16);
  // Casts: X -> f16 and the MatMul result back to float32 for the output Y; none on W.
  CHECK(count_ops(m, "Cast") == 2);
  for (const ir::Node* n : m.graph->nodes())
    if (n->op_type == "Cast") CHECK(n->inputs[0]->name != "W");
  CHECK_NOTHROW(ir::verify(m));
}

// bfloat16: Conv has no bfloat16 before opset 22, so use MatMul/Add/Relu at opset 14.
constexpr const char* kMatMulBf16 = R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2,3] X) => (float[2,2] Y)
<float[3,2] W = {0.5, -0.25, 1.0, 0.125, -2.0, 0.75}, float[2] B = {0.1, -0.1}>
{
  M = MatMul (X, W)
  A = Add (M, B)
  R = Relu (A)
  Y = Softmax <axis = 1> (R)
}
)";

TEST_CASE("fp16 dtype=bf16 converts to bfloat16 within bfloat16 tolerances") {
  ir::Model m = parse_model(kMatMulBf16);
  const auto before = run_cpu(m, {2, 3});
  auto r = run_fp16(m, {{"dtype", "bf16"}});
  CHECK(r.modified);
  CHECK(value(m, "W")->initializer->dtype() == ir::DType::BF16);
  CHECK(value(m, "B")->initializer->dtype() == ir::DType::BF16);
  CHECK(value(m, "R")->dtype == ir::DType::BF16);
  CHECK(count_ops(m, "Cast") == 2);
  CHECK(r.record["dtype"] == "bf16");
  CHECK(r.record["nodes"][0]["dtype"] == "bf16");
  CHECK_NOTHROW(ir::verify(m));
  CHECK(close_ratio(run_cpu(m, {2, 3}), before, 1e-2, 1e-2) <= 1.0);
  CHECK_FALSE(run_fp16(m, {{"dtype", "bf16"}}).modified);
}

TEST_CASE("fp16 dtype=bf16 on an opset without bfloat16 Cast is unsupported (exit 4)") {
  ir::Model m = parse_model(R"(
<ir_version: 7, opset_import: ["" : 11]>
g (float[2,3] X) => (float[2,2] Y)
<float[3,2] W = {0.5, -0.25, 1.0, 0.125, -2.0, 0.75}>
{ Y = MatMul (X, W) }
)");
  CHECK_THROWS_AS(run_fp16(m, {{"dtype", "bf16"}}), UnsupportedError);
  CHECK(value(m, "W")->initializer->dtype() == ir::DType::F32);
}

TEST_CASE("fp16 replay applies the recorded decisions, not the current options") {
  ir::Model first = parse_model(kConvSoftmax);
  auto r = run_fp16(first, {{"fp32_ops", "Relu"}});
  nlohmann::ordered_json rec = r.record;

  ir::Model second = parse_model(kConvSoftmax);
  auto r2 = run_fp16(second, {}, &rec);  // default lists would convert Relu
  CHECK(value(second, "R")->dtype != ir::DType::F16);
  CHECK(r2.record["nodes"][1]["dtype"] == "f32");
  CHECK(r2.record["nodes"] == r.record["nodes"]);
  CHECK(ir::serialize_model(second) == ir::serialize_model(first));

  // A record for another model is a state mismatch (exit 3).
  ir::Model other = parse_model(kMatMulBf16);
  CHECK_THROWS_AS(run_fp16(other, {}, &rec), ModelError);
}

TEST_CASE("fp16 converts inside If branches and keeps the branch outputs' declared types") {
  ir::Model m = parse_model(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (bool c, float[2,2] X) => (float[2,2] Y)
<float[2,2] W = {0.5, -1.0, 0.25, 2.0}>
{
  Y = If (c) <
    then_branch = t () => (float[2,2] T) { T = MatMul (X, W) },
    else_branch = e () => (float[2,2] E) { E = Relu (X) }
  >
}
)");
  auto r = run_fp16(m);
  CHECK(r.modified);
  CHECK(value(m, "W")->initializer->dtype() == ir::DType::F16);
  const ir::Node* iff = m.graph->outputs[0]->producer;
  REQUIRE(iff != nullptr);
  ir::Graph* then_g = iff->attr_graph("then_branch");
  REQUIRE(then_g != nullptr);
  CHECK(then_g->outputs[0]->name == "T");
  CHECK(then_g->outputs[0]->dtype == ir::DType::F32);
  CHECK(count_ops(m, "Cast") == 2);  // X -> f16 and the MatMul result back to f32, inside the branch
  CHECK(m.graph->outputs[0]->dtype == ir::DType::F32);
  CHECK_NOTHROW(ir::verify(m));

  backends::ExecOptions eo;
  eo.threads = 1;
  backends::Executor ex(m, eo);
  const auto x = ir::Tensor::from_vector<float>({2, 2}, {1.f, 2.f, 3.f, 4.f});
  ir::Tensor c = ir::Tensor::allocate(ir::DType::Bool, {});
  c.mutable_raw()[0] = std::byte{1};
  auto outs = ex.run({{"c", backends::RValue::of(c)}, {"X", backends::RValue::of(x)}});
  const auto y = as_floats(outs[0].tensor);
  CHECK(y == std::vector<float>{1.0f, 3.0f, 2.5f, 5.0f});  // exact in fp16 for these values
}

}  // namespace
}  // namespace mcc
