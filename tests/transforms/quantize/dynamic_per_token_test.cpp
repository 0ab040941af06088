// quantize{mode=dynamic dynamic_activations=per_token}: each row of a quantized
// activation is centred and scaled to [-1, 1] by its own run-time min/max before
// DynamicQuantizeLinear, and the MatMul/Gemm outputs are rescaled row by row (plus the centre times
// the weight's column sums). Checks the graph form (one set of row statistics per activation
// however many layers read it, ReduceMax axes as an attribute before opset 18 and an input from
// it), the record (per_token on the point) and its replay, and that one outlier row no longer
// costs the other rows their precision, which is what a per-tensor range does.
#include <doctest/doctest.h>

#include <cmath>

#include "support/graph_builder.h"
#include "transforms/quantize/dynamic_block.h"
#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;
using json = nlohmann::ordered_json;

namespace {

std::vector<std::pair<std::string, backends::RValue>> feeds(uint32_t seed) { return test::dynamic_block_feeds(seed); }

/// y = MatMul(x[R, 64], W[64, 16]) at `opset`.
ir::Model one_matmul(int64_t opset) {
  ir::Model m = test::empty_model(opset);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {8, 64});
  auto& mm = test::add_node(g, "MatMul", "mm", {&x, &test::add_random_init(g, "W", {64, 16}, 31)}, {"y"}, opset);
  test::mark_output(g, *mm.outputs[0]);
  return m;
}

/// Rows of x uniform in [-1, 1] plus 0.5, except row 0, which runs 100x larger.
ir::Tensor outlier_rows() {
  ir::Tensor x = test::random_tensor({8, 64}, 77, -1.f, 1.f);
  auto d = x.mutable_data<float>();
  for (size_t i = 0; i < d.size(); ++i) d[i] = i < 64 ? d[i] * 100.f : d[i] + 0.5f;
  return x;
}

/// Largest |got - want| over rows 1..7 of a [8, 16] output, relative to the largest |want| there.
double rest_error(const ir::Tensor& got, const ir::Tensor& want) {
  const auto g = got.data<float>(), w = want.data<float>();
  double err = 0, ref = 0;
  for (size_t i = 16; i < g.size(); ++i) {
    err = std::max(err, std::fabs(double(g[i]) - w[i]));
    ref = std::max(ref, std::fabs(double(w[i])));
  }
  return err / ref;
}

bool point_per_token(const json& record, const std::string& tensor) {
  for (const auto& p : record["points"])
    if (p["tensor"] == tensor) return p.value("per_token", false);
  FAIL("no point for " << tensor);
  return false;
}

/// Checks every output against the float model's: cosine above 0.999.
void check_close_to_float(const std::vector<ir::Tensor>& got, const std::vector<ir::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double c = test::cosine(got[i], want[i]);
    MESSAGE("output " << i << ": cosine vs float " << c);
    CHECK(c > 0.999);
  }
}

}  // namespace

TEST_CASE("quantize mode=dynamic per_token: row statistics once per activation, outputs rescaled per row, replayed") {
  ir::Model m = test::dynamic_block();
  const auto want = test::run_cpu(m, feeds(1));
  const auto res = test::run_quantize(m, {{"mode", "dynamic"}, {"dynamic_activations", "per_token"}});
  CHECK(test::count_ops(m, "DynamicQuantizeLinear") == 3);  // x (proj_q and proj_k), h, z
  CHECK(test::count_ops(m, "ReduceMax") == 3);
  CHECK(test::count_ops(m, "ReduceMin") == 3);
  CHECK(test::count_ops(m, "MatMulInteger") == 4);
  // The row statistics keep the last axis (keepdims, axes as an attribute at opset 17).
  for (const ir::Node* n : m.graph->nodes())
    if (n->op_type == "ReduceMax") {
      CHECK(n->attr_int("keepdims", 0) == 1);
      CHECK(n->attr_ints("axes") == std::vector<int64_t>{-1});
      CHECK(n->inputs.size() == 1);
    }
  // Outputs keep their names; the last op of a projection adds the centre term, a Gemm's bias follows.
  CHECK(m.graph->find_value("q")->producer->op_type == "Add");
  CHECK(m.graph->find_value("Y2")->producer->op_type == "Add");
  CHECK(m.graph->find_value("Wg_column_sums")->initializer->dims() == std::vector<int64_t>{8});
  CHECK(point_per_token(res.record, "x"));
  check_close_to_float(test::run_cpu(m, feeds(1)), want);
  // Replay from the record with no data: the same numbers.
  ir::Model again = test::dynamic_block();
  const json rec = res.record;
  test::run_quantize(again, {{"mode", "dynamic"}}, &rec);  // the record, not the option, decides
  CHECK(test::max_abs_diff(test::run_cpu(again, feeds(2)), test::run_cpu(m, feeds(2))) == 0.0);
  CHECK(test::count_ops(again, "ReduceMin") == 3);
}

TEST_CASE("quantize mode=dynamic per_token: one outlier row leaves the other rows their precision") {
  const ir::Tensor x = outlier_rows();
  ir::Model ref = one_matmul(13);
  const ir::Tensor want = test::run_cpu(ref, {{"x", backends::RValue::of(x)}}).at(0);
  ir::Model tensor_wise = one_matmul(13), token_wise = one_matmul(13);
  test::run_quantize(tensor_wise, {{"mode", "dynamic"}, {"dynamic_activations", "per_tensor"}});
  test::run_quantize(token_wise, {{"mode", "dynamic"}, {"dynamic_activations", "per_token"}});
  const double e_tensor = rest_error(test::run_cpu(tensor_wise, {{"x", backends::RValue::of(x)}}).at(0), want);
  const double e_token = rest_error(test::run_cpu(token_wise, {{"x", backends::RValue::of(x)}}).at(0), want);
  MESSAGE("relative error on the ordinary rows: per tensor " << e_tensor << ", per token " << e_token);
  CHECK(e_token < 0.02);
  CHECK(e_tensor > 10 * e_token);
}

TEST_CASE("quantize mode=dynamic per_token: opset 18 takes ReduceMax axes as an input; a constant row stays finite") {
  ir::Model m = one_matmul(18);
  test::run_quantize(m, {{"mode", "dynamic"}, {"dynamic_activations", "per_token"}});
  int reduces = 0;
  for (const ir::Node* n : m.graph->nodes())
    if (n->op_type == "ReduceMax" || n->op_type == "ReduceMin") {
      ++reduces;
      CHECK_FALSE(n->has_attr("axes"));
      REQUIRE(n->inputs.size() == 2);
      CHECK(n->inputs[1]->initializer);
    }
  CHECK(reduces == 2);
  ir::Tensor x = ir::Tensor::allocate(ir::DType::F32, {8, 64});
  for (float& v : x.mutable_data<float>()) v = 3.f;  // every row constant: half range 0
  const ir::Tensor y = test::run_cpu(m, {{"x", backends::RValue::of(x)}}).at(0);
  ir::Model f = one_matmul(18);
  const ir::Tensor want = test::run_cpu(f, {{"x", backends::RValue::of(x)}}).at(0);
  for (float v : y.data<float>()) CHECK(std::isfinite(v));
  CHECK(test::cosine(y, want) > 0.999);
}

namespace {

std::vector<std::pair<std::string, backends::RValue>> feed_forward_feeds(uint32_t seed) {
  return {{"x", backends::RValue::of(test::random_tensor({2, 8, 16}, seed, -2.f, 2.f))},
          {"z", backends::RValue::of(test::random_tensor({2, 8, 16}, seed + 1, -2.f, 2.f))}};
}

}  // namespace

TEST_CASE("quantize mode=dynamic auto (the default): row ranges on feed-forward activations only, replayed") {
  ir::Model m = test::feed_forward_block();
  const auto want = test::run_cpu(m, feed_forward_feeds(1));
  const auto res = test::run_quantize(m, {{"mode", "dynamic"}});
  CHECK(res.stats["layers_dynamic"] == 3);
  CHECK(point_per_token(res.record, "x"));     // up's output reaches the GELU's Erf
  CHECK(point_per_token(res.record, "gl"));    // the GELU output
  CHECK_FALSE(point_per_token(res.record, "z"));  // an ordinary projection: one range per tensor
  CHECK(test::count_ops(m, "ReduceMax") == 2);
  CHECK(test::count_ops(m, "DynamicQuantizeLinear") == 3);
  check_close_to_float(test::run_cpu(m, feed_forward_feeds(1)), want);
  // Replay from the record with no data gives the same numbers, whatever the option says.
  ir::Model again = test::feed_forward_block();
  const json rec = res.record;
  test::run_quantize(again, {{"mode", "dynamic"}, {"dynamic_activations", "per_tensor"}}, &rec);
  CHECK(test::max_abs_diff(test::run_cpu(again, feed_forward_feeds(2)), test::run_cpu(m, feed_forward_feeds(2))) == 0.0);
  // per_tensor writes no row statistics; per_token writes them for all three activations.
  ir::Model tensor_wise = test::feed_forward_block(), token_wise = test::feed_forward_block();
  test::run_quantize(tensor_wise, {{"mode", "dynamic"}, {"dynamic_activations", "per_tensor"}, {"float_gelu_inputs", "false"}});
  test::run_quantize(token_wise, {{"mode", "dynamic"}, {"dynamic_activations", "per_token"}});
  CHECK(test::count_ops(tensor_wise, "ReduceMax") == 0);
  CHECK(test::count_ops(token_wise, "ReduceMax") == 3);
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "dynamic"}, {"dynamic_activations", "rows"}}), UsageError);
}

TEST_CASE("quantize mode=dynamic auto: a causal LM (logits of rank 3) gets row ranges on every activation") {
  // The feed-forward block with its projection output renamed to causal-LM logits [2, 8, 16].
  auto build = [] {
    ir::Model m = test::feed_forward_block();
    ir::Value* p = m.graph->find_value("p");
    REQUIRE(p != nullptr);
    m.graph->rename_value(*p, "logits");
    p->shape = ir::Shape::of({2, 8, 16});
    return m;
  };
  ir::Model m = build();
  const auto res = test::run_quantize(m, {{"mode", "dynamic"}});
  CHECK(point_per_token(res.record, "z"));
  CHECK(point_per_token(res.record, "x"));
  CHECK(point_per_token(res.record, "gl"));
  CHECK(test::count_ops(m, "ReduceMax") == 3);
}

TEST_CASE("quantize mode=dynamic per_token: row ends on codes 0 and 255; records without row_ends_on_codes replay the [-1, 1] form") {
  ir::Model m = one_matmul(17);
  const auto res = test::run_quantize(m, {{"mode", "dynamic"}, {"dynamic_activations", "per_token"}});
  const json* px = nullptr;
  for (const auto& p : res.record["points"])
    if (p["tensor"] == "x") px = &p;
  REQUIRE(px != nullptr);
  CHECK((*px)["row_ends_on_codes"] == true);
  // The normalised rows span [-1, 127/128]: DynamicQuantizeLinear's scale is 1/128, its zero point 128.
  const ir::Tensor x = outlier_rows();
  ir::Model probe = one_matmul(17);
  test::run_quantize(probe, {{"mode", "dynamic"}, {"dynamic_activations", "per_token"}});
  const ir::Node* dq = nullptr;
  for (const ir::Node* n : probe.graph->nodes())
    if (n->op_type == "DynamicQuantizeLinear") dq = n;
  REQUIRE(dq != nullptr);
  test::mark_output(*probe.graph, *dq->outputs[1]);
  test::mark_output(*probe.graph, *dq->outputs[2]);
  const auto outs = test::run_cpu(probe, {{"x", backends::RValue::of(x)}});
  REQUIRE(outs.size() == 3);
  CHECK(outs[1].data<float>()[0] == doctest::Approx(1.0 / 128).epsilon(1e-6));
  CHECK(outs[2].data<uint8_t>()[0] == 128);
  // A record from before the key replays the earlier form (centre = (max + min) / 2).
  json old = res.record;
  for (auto& p : old["points"]) p.erase("row_ends_on_codes");
  ir::Model again = one_matmul(17);
  test::run_quantize(again, {{"mode", "dynamic"}, {"dynamic_activations", "per_token"}}, &old);
  int half_widths = 0;
  for (const ir::Node* n : again.graph->nodes()) half_widths += n->outputs[0]->name.find("_row_half_width") != std::string::npos;
  CHECK(half_widths == 1);
  const ir::Tensor want = test::run_cpu(one_matmul(17), {{"x", backends::RValue::of(x)}}).at(0);
  CHECK(test::cosine(test::run_cpu(again, {{"x", backends::RValue::of(x)}}).at(0), want) > 0.999);
  CHECK(test::cosine(test::run_cpu(m, {{"x", backends::RValue::of(x)}}).at(0), want) > 0.999);
  json bad = res.record;
  for (auto& p : bad["points"])
    if (p["tensor"] == "x") p["per_token"] = false;
  ir::Model refused = one_matmul(17);
  CHECK_THROWS_AS(test::run_quantize(refused, {{"mode", "dynamic"}, {"dynamic_activations", "per_token"}}, &bad), ModelError);
}
