// quantize: measured sensitivity (quantize/mixed.cpp): keep_float_top keeps the most damaging
// activations float (or 16-bit, mixed_fallback=16bit) and says how many; mixed_target stops at the first k that meets it (or keeps
// all float and says the target was missed); method=auto picks a method per activation; the
// choice is deterministic, recorded and replays byte-identically without data.
#include <doctest/doctest.h>

#include <cmath>

#include "transforms/quantize/mixed.h"
#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;
using mcc::test::add_input;
using mcc::test::add_node;
using mcc::test::add_random_init;
using mcc::test::attr_i;
using mcc::test::attr_ints;
using mcc::test::run_quantize;

namespace {

// X[1,4,8,8] -> conv1 -> relu -> conv2 (depthwise) -> relu -> conv3 -> Y
ir::Model conv_chain() {
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "X", {1, 4, 8, 8});
  auto& c1 = add_node(g, "Conv", "conv1", {&x, &add_random_init(g, "W1", {16, 4, 3, 3}, 21), &add_random_init(g, "B1", {16}, 22)},
                      {"c1"}, 13, {attr_ints("pads", {1, 1, 1, 1})});
  auto& r1 = add_node(g, "Relu", "relu1", {c1.outputs[0]}, {"r1"}, 13);
  auto& c2 = add_node(g, "Conv", "conv2", {r1.outputs[0], &add_random_init(g, "W2", {16, 1, 3, 3}, 23), &add_random_init(g, "B2", {16}, 24)},
                      {"c2"}, 13, {attr_ints("pads", {1, 1, 1, 1}), attr_i("group", 16)});
  auto& r2 = add_node(g, "Relu", "relu2", {c2.outputs[0]}, {"r2"}, 13);
  auto& c3 = add_node(g, "Conv", "conv3", {r2.outputs[0], &add_random_init(g, "W3", {8, 16, 1, 1}, 25), &add_random_init(g, "B3", {8}, 26)},
                      {"Y"}, 13);
  test::mark_output(g, *c3.outputs[0]);
  return m;
}

const std::vector<int64_t> kInputDims = {1, 4, 8, 8};

bool quantized_activation(const ir::Model& m, const std::string& name) {
  if (m.graph->find_value(name + "_dequantized")) return true;  // graph inputs
  const ir::Value* v = m.graph->find_value(name);
  return v && v->producer && v->producer->op_type == "DequantizeLinear";
}

/// Mean output cosine of q against f over n random inputs (cpu Executor).
double mean_cosine(const ir::Model& f, const ir::Model& q, int n) {
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const auto feeds = test::random_feeds(f, 7000 + 10 * i);
    const auto a = test::run_cpu(f, feeds)[0], b = test::run_cpu(q, feeds)[0];
    auto x = a.data<float>(), y = b.data<float>();
    double xy = 0, xx = 0, yy = 0;
    for (size_t k = 0; k < x.size(); ++k) xy += double(x[k]) * y[k], xx += double(x[k]) * x[k], yy += double(y[k]) * y[k];
    sum += xy / std::sqrt(xx * yy);
  }
  return sum / n;
}

}  // namespace

TEST_CASE("quantize: keep_float_top keeps the most damaging activation float, recorded and replayed without data") {
  const ir::Model f = conv_chain();
  ir::Model all8 = conv_chain(), a = conv_chain(), a2 = conv_chain(), b = conv_chain();
  nlohmann::ordered_json record;
  {
    test::CalibDir calib(kInputDims, 6, 4100);
    run_quantize(all8, {{"calib", calib.path()}});
    const auto r = run_quantize(a, {{"calib", calib.path()}, {"keep_float_top", "1"}, {"sensitivity_samples", "3"}});
    record = r.record;
    CHECK(r.modified);
    // Deterministic: the same data gives the same model and record.
    const auto r2 = run_quantize(a2, {{"calib", calib.path()}, {"keep_float_top", "1"}, {"sensitivity_samples", "3"}});
    CHECK(r2.record.dump() == record.dump());
    CHECK(ir::serialize_model(a) == ir::serialize_model(a2));
  }  // the calibration folder is gone now
  const auto& mixed = record["mixed"];
  REQUIRE(mixed["kept_float"].size() == 1);
  CHECK(record["stats"]["activations_kept_float"] == 1);
  CHECK(record["stats"]["activations"] == 2);
  CHECK(record["stats"]["layers_all_8bit"] == 2);
  CHECK(mixed["samples"] == 3);
  // The kept tensor is the one with the largest measured loss.
  std::string worst;
  double worst_loss = -1;
  for (const auto& u : mixed["sensitivity"])
    if (u["cosine_loss"].get<double>() > worst_loss) worst_loss = u["cosine_loss"], worst = u["tensors"][0];
  CHECK(mixed["kept_float"][0] == worst);
  CHECK_FALSE(quantized_activation(a, worst));
  int quantized = 0;
  for (const char* t : {"X", "r1", "r2"}) quantized += quantized_activation(a, t);
  CHECK(quantized == 2);
  bool listed = false;
  for (const auto& s : record["skipped_tensors"]) listed = listed || s["tensor"] == worst;
  CHECK(listed);
  CHECK_NOTHROW(ir::verify(a));
  // Numerics: keeping the worst activation float brings the output closer to float32.
  const double c_all8 = mean_cosine(f, all8, 6), c_mixed = mean_cosine(f, a, 6);
  INFO("cosine all-8-bit " << c_all8 << ", one float " << c_mixed);
  CHECK(c_mixed >= c_all8);
  CHECK(c_mixed > 0.99);
  // Replay: byte-identical, no data.
  const auto parsed = nlohmann::ordered_json::parse(record.dump(2));
  const auto res = run_quantize(b, {{"calib", "/nonexistent"}}, &parsed);
  CHECK(res.modified);
  CHECK(res.stats["activations_kept_float"] == 1);
  CHECK(ir::serialize_model(a) == ir::serialize_model(b));
  // Idempotence: a quantized model is left alone.
  CHECK_FALSE(run_quantize(a, {{"calib", "/nonexistent"}, {"keep_float_top", "1"}}).modified);
}

TEST_CASE("quantize: mixed_target stops at the first k that meets it, or keeps everything float and says so") {
  test::CalibDir calib(kInputDims, 4, 4200);
  ir::Model easy = conv_chain(), hard = conv_chain();
  const auto r = run_quantize(easy, {{"calib", calib.path()}, {"mixed_target", "0.5"}});
  CHECK(r.stats["activations_kept_float"] == 0);
  CHECK(r.record["mixed"]["target_met"] == true);
  CHECK(r.record["mixed"]["searched"].size() == 1);
  CHECK(r.record["mixed"]["samples"] == 4);
  // Cosine 1 is out of reach with int8 weights: every activation float, target_met false.
  const auto h = run_quantize(hard, {{"calib", calib.path()}, {"mixed_target", "1"}});
  CHECK(h.stats["activations_kept_float"] == 3);
  CHECK(h.stats["activations"] == 0);
  CHECK(h.stats["layers_all_8bit"] == 0);
  CHECK(h.stats["weights"] == 3);
  CHECK(h.record["mixed"]["target_met"] == false);
  CHECK(h.record["mixed"]["kept_float"].size() == 3);
  for (const char* t : {"X", "r1", "r2"}) CHECK_FALSE(quantized_activation(hard, t));
}

TEST_CASE("quantize: mixed_fallback=16bit gives the chosen activations 16 bits (opset 21 only when one is chosen)") {
  ir::Model a = conv_chain(), b = conv_chain(), none = conv_chain();
  nlohmann::ordered_json record;
  {
    test::CalibDir calib(kInputDims, 4, 4500);
    record = run_quantize(a, {{"calib", calib.path()}, {"keep_float_top", "1"}, {"mixed_fallback", "16bit"}}).record;
    const auto r0 = run_quantize(none, {{"calib", calib.path()}, {"mixed_target", "0.5"}, {"mixed_fallback", "16bit"}});
    CHECK(r0.stats["activations_16bit"] == 0);
    CHECK(r0.record["opset"]["to"] == 13);
  }
  CHECK(record["mixed"]["fallback"] == "16bit");
  CHECK(record["stats"]["activations_16bit"] == 1);
  CHECK(record["stats"]["activations_kept_float"] == 0);
  CHECK(record["stats"]["activations"] == 3);
  CHECK(record["stats"]["layers_all_8bit"] == 2);
  CHECK(record["opset"]["to"] == 21);
  REQUIRE(record["widened"].size() == 1);
  CHECK(record["widened"][0]["tensor"] == record["mixed"]["kept_float"][0]);
  CHECK_NOTHROW(ir::verify(a));
  CHECK(mean_cosine(conv_chain(), a, 4) > 0.99);
  const auto parsed = nlohmann::ordered_json::parse(record.dump(2));
  CHECK(run_quantize(b, {{"calib", "/nonexistent"}}, &parsed).modified);
  CHECK(ir::serialize_model(a) == ir::serialize_model(b));
}

TEST_CASE("quantize: method=auto records the measured method of each activation") {
  test::CalibDir calib(kInputDims, 4, 4300);
  ir::Model m = conv_chain();
  const auto r = run_quantize(m, {{"calib", calib.path()}, {"method", "auto"}, {"sensitivity_samples", "2"}});
  CHECK(r.modified);
  CHECK(r.stats["activations_kept_float"] == 0);
  CHECK(r.record["calibration"]["method"] == "auto");
  const auto& sens = r.record["mixed"]["sensitivity"];
  REQUIRE(sens.size() == 3);
  for (const auto& u : sens) {
    bool per_channel = false;
    for (const auto& p : r.record["points"])
      if (p["tensor"] == u["tensors"][0]) per_channel = !p["axis"].is_null();
    if (per_channel) {
      // A depthwise input keeps its per-channel ranges (quantize/depthwise.h): one candidate, so
      // nothing to compare and no per-method losses recorded.
      CHECK_FALSE(u.contains("loss_by_method"));
      continue;
    }
    REQUIRE(u.contains("loss_by_method"));  // (operator[] on a missing key of a const json is undefined)
    REQUIRE(u["loss_by_method"].size() == 3);
    // The chosen method has the smallest loss (the first of equals).
    double best = 2;
    std::string pick;
    for (const auto& [k, v] : u["loss_by_method"].items())
      if (v.get<double>() < best) best = v, pick = k;
    CHECK(u["method"] == pick);
    for (const auto& p : r.record["points"])
      if (p["tensor"] == u["tensors"][0]) CHECK(p["method"] == pick);
  }
  CHECK(mean_cosine(conv_chain(), m, 4) > 0.99);
}

TEST_CASE("quantize: bad sensitivity options are usage errors") {
  test::CalibDir calib(kInputDims, 2, 4400);
  ir::Model m = conv_chain();
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"mixed_target", "1.5"}}), UsageError);
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"keep_float_top", "-1"}}), UsageError);
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"sensitivity_samples", "0"}}), UsageError);
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"mixed_target", "0.9"}, {"keep_float_top", "1"}}), UsageError);
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"method", "best"}}), UsageError);
  CHECK_THROWS_AS(run_quantize(m, {{"calib", calib.path()}, {"mixed_fallback", "bf16"}}), UsageError);
  CHECK(m.graph->find_value("X_dequantized") == nullptr);
}

TEST_CASE("quantize: float_run_gap joins float activations into runs, whole units only") {
  using transforms::quantize::join_float_runs;
  // Ten activations, each its own unit; 2 and 6 float.
  std::vector<std::vector<size_t>> units;
  std::vector<size_t> unit_of;
  for (size_t i = 0; i < 10; ++i) units.push_back({i}), unit_of.push_back(i);
  const std::vector<bool> ok(10, true);
  std::vector<bool> use(10, true);
  use[2] = use[6] = false;
  auto floats = [](const std::vector<bool>& u) {
    std::string s;
    for (bool b : u) s += b ? 'q' : 'f';
    return s;
  };
  CHECK(floats(join_float_runs(use, ok, units, unit_of, 0)) == "qqfqqqfqqq");
  // Gap 2: the two before the first float one join; 3 between and 3 after stay.
  CHECK(floats(join_float_runs(use, ok, units, unit_of, 2)) == "fffqqqfqqq");
  // Gap 3: one run from the start to the end.
  CHECK(floats(join_float_runs(use, ok, units, unit_of, 3)) == "ffffffffff");
  // A unit reaching outside the stretch (4 shares a scale with 9) stays quantized, both ends.
  std::vector<std::vector<size_t>> grouped;
  std::vector<size_t> group_of(10);
  for (size_t i = 0; i < 10; ++i)
    if (i != 9) group_of[i] = grouped.size(), grouped.push_back(i == 4 ? std::vector<size_t>{4, 9} : std::vector<size_t>{i});
  group_of[9] = group_of[4];
  CHECK(floats(join_float_runs(use, ok, grouped, group_of, 3)) == "ffffqffffq");
  // Activations that are not quantized at all are neither counted nor changed.
  std::vector<bool> ok2 = ok;
  ok2[3] = ok2[4] = false;
  CHECK(floats(join_float_runs(use, ok2, units, unit_of, 1)) == "qqfqqffqqq");
  // No float activation: nothing to join.
  CHECK(floats(join_float_runs(std::vector<bool>(10, true), ok, units, unit_of, 20)) == "qqqqqqqqqq");
}
