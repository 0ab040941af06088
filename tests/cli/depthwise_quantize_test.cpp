// Per-channel activation scales on depthwise convolution inputs, checked three ways: the stage
// records axis-1 points (and leaves the depthwise bias float32), the result is closer to fp32 than
// one scale per tensor, `--state` replays it byte for byte, ONNX Runtime loads and runs it, and
// mcc's cpu backend matches ONNX Runtime on it. Channels of like ranges keep one scale.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/onnx_io.h"
#include "support/graph_builder.h"
#include "support/ort.h"
#include "support/run_mcc.h"
#include "transforms/quantize/quantize_test_util.h"  // tests/transforms/quantize: CalibDir

namespace fs = std::filesystem;
using mcc::test::run_mcc;
using nlohmann::json;

namespace {

/// X[1,8,12,12] -> 1x1 Conv (16 channels, channel k scaled by 1.5^k: maxima 1 to ~470) -> Sigmoid*x
/// (SiLU) -> depthwise 3x3 Conv (group 16) -> Y. `spread` 1 with `same_rows` gives 16 identical
/// channels.
mcc::ir::Model depthwise_model(float spread, bool same_rows = false) {
  using namespace mcc;
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "X", {1, 8, 12, 12});
  ir::Tensor w1 = test::random_tensor({16, 8, 1, 1}, 31);
  auto v = w1.mutable_data<float>();
  for (size_t k = 0; k < 16; ++k)
    for (size_t i = 0; i < 8; ++i) v[k * 8 + i] = (same_rows ? v[i] : v[k * 8 + i]) * std::pow(spread, static_cast<float>(k));
  ir::Value& w1v = g.add_initializer("W1", std::move(w1));
  auto& c1 = test::add_node(g, "Conv", "pointwise", {&x, &w1v, &test::add_random_init(g, "B1", {16}, 32)}, {"c1"}, 13);
  auto& s1 = test::add_node(g, "Sigmoid", "sigmoid", {c1.outputs[0]}, {"s1"}, 13);
  auto& a1 = test::add_node(g, "Mul", "silu", {c1.outputs[0], s1.outputs[0]}, {"a1"}, 13);
  auto& c2 = test::add_node(g, "Conv", "depthwise",
                            {a1.outputs[0], &test::add_random_init(g, "W2", {16, 1, 3, 3}, 33),
                             &test::add_random_init(g, "B2", {16}, 34)},
                            {"Y"}, 13, {test::attr_ints("pads", {1, 1, 1, 1}), test::attr_i("group", 16)});
  test::mark_output(g, *c2.outputs[0]);
  return m;
}

const json* point_of(const json& state, const std::string& tensor) {
  for (const auto& s : state["stages"])
    if (s["pass"] == "quantize")
      for (const auto& p : s["record"]["points"])
        if (p["tensor"] == tensor) return &p;
  return nullptr;
}

double min_snr(const std::string& model, const std::string& reference, const std::string& inputs) {
  const auto e = run_mcc({"eval", model, "--reference", reference, "--inputs", inputs, "--json", "--min-cosine", "0"});
  const json r = json::parse(e.out);
  return r["outputs"][0]["min_snr_db"].get<double>();
}

}  // namespace

TEST_CASE("quantize: depthwise inputs get per-channel scales; ONNX Runtime runs them and mcc matches it") {
  mcc::test::TempDir tmp("mcc-depthwise");
  const std::string model = (tmp.path / "dw.onnx").string();
  mcc::ir::save_model(depthwise_model(1.5f), model);
  mcc::test::CalibDir calib({1, 8, 12, 12}, 8, 5100);
  mcc::test::CalibDir eval({1, 8, 12, 12}, 4, 5200);

  const std::string q = (tmp.path / "q.onnx").string();
  const auto r = run_mcc({"quantize", model, "-o", q, "--calib", calib.path(), "--target", "generic", "--no-check", "--threads", "1"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json state = json::parse(mcc::test::slurp(tmp.path / "q.mcc.json"));
  const json* a1 = point_of(state, "a1");
  REQUIRE(a1 != nullptr);
  CHECK((*a1)["axis"] == 1);
  CHECK((*a1)["scale"].size() == 16);
  CHECK((*a1)["method"] == "minmax per channel");
  bool bias_float = false;
  for (const auto& s : state["stages"][1]["record"]["skipped_tensors"])
    bias_float = bias_float || (s["tensor"] == "B2" && s["reason"].get<std::string>().find("per-channel") != std::string::npos);
  CHECK(bias_float);

  // One scale per tensor for comparison: on the calibrated data (nothing clipped) the per-channel
  // result is closer to fp32. (On other random inputs a channel can exceed its calibrated range and
  // clip where one wide range would not: per-channel ranges want representative calibration data.)
  const std::string t = (tmp.path / "t.onnx").string();
  const auto c = run_mcc({"convert", model, "-o", t, "-p", "fold,quantize{calib=" + calib.path() + " target=generic depthwise_per_channel=false}"});
  REQUIRE(c.code == 0);
  const double snr_channel = min_snr(q, model, calib.path()), snr_tensor = min_snr(t, model, calib.path());
  MESSAGE("output SNR vs fp32: per-channel depthwise input " << snr_channel << " dB, per-tensor " << snr_tensor << " dB");
  CHECK(snr_channel > snr_tensor + 3);

  // Replay: byte-identical, no data.
  const std::string again = (tmp.path / "again.onnx").string();
  REQUIRE(run_mcc({"quantize", model, "-o", again, "--state", (tmp.path / "q.mcc.json").string()}).code == 0);
  CHECK(mcc::test::slurp(again) == mcc::test::slurp(q));

  // ONNX Runtime runs the per-channel QDQ model; mcc's cpu backend gives its outputs.
  REQUIRE_MESSAGE(mcc::test::have_onnxruntime(), mcc::test::kOrtMissing);
  REQUIRE(mcc::test::write_ort_outputs(q, eval.path()));
  const auto e = run_mcc({"eval", q, "--golden", eval.path(), "--min-cosine", "0.99999", "--json"});
  INFO(e.out << e.err);
  CHECK(e.code == 0);
}

TEST_CASE("quantize: depthwise inputs whose channels span like ranges keep one scale") {
  mcc::test::TempDir tmp("mcc-depthwise-like");
  const std::string model = (tmp.path / "dw.onnx").string();
  mcc::ir::save_model(depthwise_model(1.0f, /*same_rows=*/true), model);
  mcc::test::CalibDir calib({1, 8, 12, 12}, 8, 5300);
  const std::string q = (tmp.path / "q.onnx").string();
  REQUIRE(run_mcc({"quantize", model, "-o", q, "--calib", calib.path(), "--no-check"}).code == 0);
  const json state = json::parse(mcc::test::slurp(tmp.path / "q.mcc.json"));
  const json* a1 = point_of(state, "a1");
  REQUIRE(a1 != nullptr);
  CHECK((*a1)["axis"].is_null());
  CHECK((*a1)["method"] == "minmax");
}
