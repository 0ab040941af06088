// quantize: bias correction (fires, reduces the output error on a conv chain, recorded, replayed
// byte-identically without data), widen_below_db (16-bit activations, opset raised to 21 only when
// every op keeps its meaning; a Reduce op with an 'axes' attribute blocks the raise, exit 4).
#include <doctest/doctest.h>

#include <cmath>

#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;
using mcc::test::add_input;
using mcc::test::add_node;
using mcc::test::add_random_init;
using mcc::test::attr_i;
using mcc::test::attr_ints;
using mcc::test::run_quantize;

namespace {

// X[1,4,8,8] in [0,1] -> conv1 -> relu -> conv2 (depthwise) -> relu -> conv3 -> Y
ir::Model conv_chain(int opset = 13) {
  ir::Model m = test::empty_model(opset);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "X", {1, 4, 8, 8});
  auto& c1 = add_node(g, "Conv", "conv1", {&x, &add_random_init(g, "W1", {16, 4, 3, 3}, 11), &add_random_init(g, "B1", {16}, 12)},
                      {"c1"}, opset, {attr_ints("pads", {1, 1, 1, 1})});
  auto& r1 = add_node(g, "Relu", "relu1", {c1.outputs[0]}, {"r1"}, opset);
  auto& c2 = add_node(g, "Conv", "conv2", {r1.outputs[0], &add_random_init(g, "W2", {16, 1, 3, 3}, 13), &add_random_init(g, "B2", {16}, 14)},
                      {"c2"}, opset, {attr_ints("pads", {1, 1, 1, 1}), attr_i("group", 16)});
  auto& r2 = add_node(g, "Relu", "relu2", {c2.outputs[0]}, {"r2"}, opset);
  auto& c3 = add_node(g, "Conv", "conv3", {r2.outputs[0], &add_random_init(g, "W3", {8, 16, 1, 1}, 15), &add_random_init(g, "B3", {8}, 16)},
                      {"Y"}, opset);
  test::mark_output(g, *c3.outputs[0]);
  return m;
}

/// The graph input's shape, which the calibration samples share.
const std::vector<int64_t> kInputDims = {1, 4, 8, 8};

/// Squared output error and mean output error against float32 over `n` random inputs.
std::pair<double, double> output_error(const ir::Model& f, const ir::Model& q, int n) {
  double sq = 0, shift = 0;
  int64_t count = 0;
  for (int i = 0; i < n; ++i) {
    const auto feeds = test::random_feeds(f, 5000 + 10 * i);
    const auto a = test::run_cpu(f, feeds)[0], b = test::run_cpu(q, feeds)[0];
    auto x = a.data<float>(), y = b.data<float>();
    for (size_t k = 0; k < x.size(); ++k) {
      sq += (double(y[k]) - x[k]) * (double(y[k]) - x[k]);
      shift += double(y[k]) - x[k];
      ++count;
    }
  }
  return {sq / count, std::fabs(shift / count)};
}

}  // namespace

TEST_CASE("quantize: bias correction reduces the output error of a conv chain and is recorded") {
  test::CalibDir calib(kInputDims, 16, 3000);
  const ir::Model f = conv_chain();
  ir::Model off = conv_chain(), on = conv_chain();
  // Per-tensor weights rounded to nearest round coarsely: the expected shift (Wq - W) E[x] is
  // clearly visible (GPTQ's codes, algorithm=auto, already shrink it).
  const auto r_off = run_quantize(
      off, {{"calib", calib.path()}, {"per_channel", "false"}, {"bias_correction", "false"}, {"algorithm", "rtn"}});
  const auto r_on = run_quantize(on, {{"calib", calib.path()}, {"per_channel", "false"}, {"algorithm", "rtn"}});
  CHECK(r_on.modified);
  CHECK(r_on.stats["bias_corrections"] == 3);
  CHECK(r_off.stats["bias_corrections"] == 0);
  CHECK(r_on.record["bias_correction"]["corrected"].size() == 3);
  CHECK(r_on.record["bias_correction"]["corrected"][0]["tensor"] == "B1");
  CHECK(r_on.record["bias_correction"]["corrected"][0]["subtract"].size() == 16);
  CHECK_NOTHROW(ir::verify(on));
  // Structure: same QDQ layout, only the bias values differ.
  CHECK(on.graph->nodes().size() == off.graph->nodes().size());
  const auto e_off = output_error(f, off, 8), e_on = output_error(f, on, 8);
  INFO("mse " << e_off.first << " -> " << e_on.first << ", mean shift " << e_off.second << " -> " << e_on.second);
  CHECK(e_on.first < e_off.first);
  CHECK(e_on.second < e_off.second);
  // Idempotence: a second run finds the model already quantized and changes nothing.
  const auto again = run_quantize(on, {{"calib", calib.path()}});
  CHECK_FALSE(again.modified);
  CHECK(again.stats["already_quantized"] == true);
}

TEST_CASE("quantize: bias corrections and 16-bit activations replay byte-identically without data") {
  ir::Model a = conv_chain(11), b = conv_chain(11);
  nlohmann::ordered_json record;
  {
    test::CalibDir calib(kInputDims, 8, 3100);
    record = run_quantize(a, {{"calib", calib.path()}, {"widen_below_db", "200"}}).record;
  }  // the calibration folder is gone now
  CHECK(record["widened"].size() == 3);
  CHECK(record["opset"]["to"] == 21);
  CHECK(record["stats"]["activations_16bit"] == 3);
  CHECK(record["stats"]["layers_all_8bit"] == 0);
  CHECK(a.graph->find_value("X_dequantized")->producer->inputs[0]->producer->outputs[0]->dtype == ir::DType::U16);
  const auto parsed = nlohmann::ordered_json::parse(record.dump(2));
  const auto res = run_quantize(b, {{"calib", "/nonexistent"}}, &parsed);
  CHECK(res.modified);
  CHECK(ir::serialize_model(a) == ir::serialize_model(b));
  // A correction that does not fit the model is a model error.
  nlohmann::ordered_json bad = parsed;
  bad["bias_correction"]["corrected"][0]["subtract"].erase(0);
  ir::Model c = conv_chain(11);
  CHECK_THROWS_AS(run_quantize(c, {}, &bad), ModelError);
}

TEST_CASE("quantize: the opset is raised to 21 only when every op keeps its meaning") {
  test::CalibDir calib(kInputDims, 2, 3200);
  // Softmax-11 changed meaning at 13 (the axis semantics): raising an opset-11 model is refused, naming it.
  ir::Model m = conv_chain(11);
  ir::Node& s = add_node(*m.graph, "Softmax", "soft", {m.graph->find_value("Y")}, {"P"}, 11);
  test::mark_output(*m.graph, *s.outputs[0]);
  std::string what;
  try {
    run_quantize(m, {{"calib", calib.path()}, {"widen_below_db", "200"}});
  } catch (const UnsupportedError& e) {
    what = e.what();
  }
  CHECK(what.find("Softmax-11 changed meaning") != std::string::npos);
  // ReduceMean's axes attribute became an input at 18: the raise rewrites the node instead of refusing.
  ir::Model n = conv_chain(13);
  ir::Node& r = add_node(*n.graph, "ReduceMean", "reduce", {n.graph->find_value("Y")}, {"P"}, 13, {attr_ints("axes", {2, 3})});
  test::mark_output(*n.graph, *r.outputs[0]);
  CHECK(run_quantize(n, {{"calib", calib.path()}, {"widen_below_db", "200"}}).record["opset"]["to"] == 21);
  const ir::Node* reduce = n.graph->find_value("P")->producer;
  CHECK_FALSE(reduce->has_attr("axes"));
  REQUIRE(reduce->inputs.size() == 2);
  CHECK(reduce->inputs[1]->initializer->data<int64_t>()[1] == 3);
  // In 8 bits the opset stays 13 and the node keeps its attribute.
  ir::Model k = conv_chain(13);
  ir::Node& r2 = add_node(*k.graph, "ReduceMean", "reduce", {k.graph->find_value("Y")}, {"P"}, 13, {attr_ints("axes", {2, 3})});
  test::mark_output(*k.graph, *r2.outputs[0]);
  CHECK(run_quantize(k, {{"calib", calib.path()}}).record["opset"]["to"] == 13);
  CHECK(r2.has_attr("axes"));
  CHECK_THROWS_AS(run_quantize(m = conv_chain(13), {{"calib", calib.path()}, {"widen_below_db", "-1"}}), UsageError);
}
