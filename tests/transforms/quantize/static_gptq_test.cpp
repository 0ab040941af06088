// quantize, static mode, algorithm=gptq: GPTQ chooses the int8
// codes of strided, depthwise, grouped-dilated Conv and Gemm weights under unchanged scales; each
// layer's proxy loss beats round to nearest, the output is closer to float32 on inputs calibration
// never saw, the codes are recorded and replayed byte-identically without data, the record does not
// depend on the thread count, a later attempt of the escalation ladder reuses the codes, input rows
// calibration never excited keep their nearest codes, and the option is refused where it has no
// meaning.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ir/errors.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "transforms/quantize/calibration_cache.h"
#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;

namespace {

const std::vector<int64_t> kDims = {1, 4, 10, 10};

// X[1,4,10,10] -> conv1 3x3 stride 2 (16) -> relu -> conv2 depthwise 3x3 -> relu
//   -> conv3 3x3 group 2 dilation 2 (8) -> relu -> GlobalAveragePool -> Flatten -> Gemm transB (10) -> Y
ir::Model net() {
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "X", kDims);
  auto& c1 = test::add_node(g, "Conv", "conv1", {&x, &test::add_random_init(g, "W1", {16, 4, 3, 3}, 41), &test::add_random_init(g, "B1", {16}, 42)},
                      {"c1"}, 13, {test::attr_ints("pads", {1, 1, 1, 1}), test::attr_ints("strides", {2, 2})});
  auto& r1 = test::add_node(g, "Relu", "relu1", {c1.outputs[0]}, {"r1"}, 13);
  auto& c2 = test::add_node(g, "Conv", "conv2", {r1.outputs[0], &test::add_random_init(g, "W2", {16, 1, 3, 3}, 43), &test::add_random_init(g, "B2", {16}, 44)},
                      {"c2"}, 13, {test::attr_ints("pads", {1, 1, 1, 1}), test::attr_i("group", 16)});
  auto& r2 = test::add_node(g, "Relu", "relu2", {c2.outputs[0]}, {"r2"}, 13);
  auto& c3 = test::add_node(g, "Conv", "conv3", {r2.outputs[0], &test::add_random_init(g, "W3", {8, 8, 3, 3}, 45), &test::add_random_init(g, "B3", {8}, 46)},
                      {"c3"}, 13, {test::attr_ints("pads", {2, 2, 2, 2}), test::attr_ints("dilations", {2, 2}), test::attr_i("group", 2)});
  auto& r3 = test::add_node(g, "Relu", "relu3", {c3.outputs[0]}, {"r3"}, 13);
  auto& gap = test::add_node(g, "GlobalAveragePool", "gap", {r3.outputs[0]}, {"gap"}, 13);
  auto& flat = test::add_node(g, "Flatten", "flat", {gap.outputs[0]}, {"flat"}, 13);
  auto& fc = test::add_node(g, "Gemm", "fc", {flat.outputs[0], &test::add_random_init(g, "W4", {10, 8}, 47), &test::add_random_init(g, "B4", {10}, 48)},
                      {"Y"}, 13, {test::attr_i("transB", 1)});
  test::mark_output(g, *fc.outputs[0]);
  return m;
}

/// Mean squared output error against float32 over `n` inputs no calibration folder holds.
double output_mse(const ir::Model& f, const ir::Model& q, int n) {
  double sq = 0;
  int64_t count = 0;
  for (int i = 0; i < n; ++i) {
    const auto feeds = test::random_feeds(f, 9000 + 10 * i);
    const auto a = test::run_cpu(f, feeds)[0], b = test::run_cpu(q, feeds)[0];
    auto x = a.data<float>(), y = b.data<float>();
    for (size_t k = 0; k < x.size(); ++k, ++count) sq += (double(y[k]) - x[k]) * (double(y[k]) - x[k]);
  }
  return sq / static_cast<double>(count);
}

/// The int8 codes the quantized model holds for weight `w`.
std::vector<int8_t> codes_of(const ir::Model& m, const std::string& w) {
  const ir::Value* v = m.graph->find_value(w + "_quantized");
  REQUIRE(v != nullptr);
  REQUIRE(v->initializer->dtype() == ir::DType::I8);
  const auto d = v->initializer->data<int8_t>();
  return {d.begin(), d.end()};
}

}  // namespace

TEST_CASE("quantize static algorithm=gptq: codes beat rounding to nearest, are recorded and replay without data") {
  test::CalibDir calib(kDims, 16, 7000);
  const ir::Model f = net();
  ir::Model g = net(), r = net(), replayed = net();
  const auto res = test::run_quantize(g, {{"calib", calib.path()}, {"algorithm", "gptq"}});
  test::run_quantize(r, {{"calib", calib.path()}, {"algorithm", "rtn"}});
  const auto& rec = res.record["gptq"];
  REQUIRE(rec.is_object());
  // The Gemm sees one row per sample: 16 rows for 8 inputs are too few to trust its Hessian.
  CHECK(res.stats["gptq_weights"] == 3);
  CHECK(rec["calibration"]["samples"] == 16);
  REQUIRE(rec["skipped"].size() == 1);
  CHECK(rec["skipped"][0]["node"] == "fc");
  CHECK(rec["skipped"][0]["reason"].get<std::string>().find("too few calibration rows (16) for its 8 inputs") == 0);
  REQUIRE(rec["losses"].size() == 3);
  for (const auto& l : rec["losses"]) {
    INFO(l.dump());
    CHECK(l["loss"].get<double>() < l["rtn_loss"].get<double>());
  }
  int with_codes = 0;
  for (const auto& p : res.record["points"])
    if (p["role"] == "weight") {
      CHECK(p["method"] == (p["tensor"] == "W4" ? "minmax" : "gptq"));
      with_codes += p.contains("codes") ? 1 : 0;
    }
  CHECK(with_codes == 3);
  // Same scales, other codes: GPTQ changes some, and every code stays in -127..127.
  CHECK(codes_of(g, "W4") == codes_of(r, "W4"));
  for (const std::string w : {"W1", "W2", "W3"}) {
    const auto a = codes_of(g, w), b = codes_of(r, w);
    REQUIRE(a.size() == b.size());
    CHECK(a != b);
    CHECK(*std::min_element(a.begin(), a.end()) >= -127);
  }
  const double e_gptq = output_mse(f, g, 8), e_rtn = output_mse(f, r, 8);
  INFO("held-out output mse: rtn " << e_rtn << ", gptq " << e_gptq);
  CHECK(e_gptq < e_rtn);

  const auto parsed = nlohmann::ordered_json::parse(res.record.dump(2));
  CHECK(test::run_quantize(replayed, {{"calib", "/nonexistent"}}, &parsed).modified);
  CHECK(ir::serialize_model(replayed) == ir::serialize_model(g));
  // Recorded codes of the wrong length do not fit the weight: a model error.
  nlohmann::ordered_json bad = parsed;
  for (auto& p : bad["points"])
    if (p["tensor"] == "W1") p["codes"] = "AAAA";
  ir::Model other = net();
  CHECK_THROWS_AS(test::run_quantize(other, {}, &bad), ModelError);
}

TEST_CASE("quantize static algorithm=gptq: the record and model do not depend on the thread count") {
  test::CalibDir calib(kDims, 6, 7200);
  ir::Model one = net(), two = net();
  auto run = [&](ir::Model& m, int threads) {
    auto pass = transforms::quantize::make_pass();
    transforms::Options o(pass->info(), {{"calib", calib.path()}, {"target", "ort"}, {"algorithm", "gptq"}});
    transforms::PassContext ctx{o, "quantize", nullptr, ".", threads, ""};
    return pass->run(m, ctx);
  };
  const auto a = run(one, 1), b = run(two, 2);
  INFO(a.record["gptq"]["skipped"].dump());
  CHECK(a.stats["gptq_weights"] == 2);
  CHECK(a.record.dump() == b.record.dump());
  CHECK(ir::serialize_model(one) == ir::serialize_model(two));
}

TEST_CASE("quantize static algorithm=gptq: within the ladder a later attempt takes the kept codes, the same bytes") {
  test::CalibDir calib(kDims, 16, 7300);
  ir::Model fresh = net(), first = net(), second = net(), other = net();
  const std::vector<std::pair<std::string, std::string>> gptq{{"calib", calib.path()}, {"algorithm", "gptq"}};
  const auto want = test::run_quantize(fresh, gptq);
  nlohmann::ordered_json a, b, c;
  {
    transforms::quantize::CalibrationReuse reuse(true);
    a = test::run_quantize(first, gptq).record;
    b = test::run_quantize(second, gptq).record;
    // Another layout (per-tensor weight scales): other keys, codes made anew.
    c = test::run_quantize(other, {{"calib", calib.path()}, {"algorithm", "gptq"}, {"per_channel", "false"}}).record;
  }
  CHECK(a.dump() == want.record.dump());
  CHECK(b.dump() == want.record.dump());
  CHECK(ir::serialize_model(second) == ir::serialize_model(fresh));
  CHECK(c["gptq"]["losses"].size() == 3);
  CHECK(c["gptq"]["losses"][0]["loss"] != a["gptq"]["losses"][0]["loss"]);
  CHECK_FALSE(transforms::quantize::kept_codes("anything").has_value());  // dropped with the scope
}

TEST_CASE("quantize static algorithm=gptq: input rows calibration never excited keep their nearest codes") {
  // Channel 0 of X is 0 in every calibration sample: conv1's rows for it see no data.
  test::TempDir dir("mcc-gptq-dead");
  for (int i = 0; i < 8; ++i) {
    ir::Tensor t = test::random_tensor(kDims, 7100 + i, 0.f, 1.f);
    auto v = t.mutable_data<float>();
    std::fill(v.begin(), v.begin() + 100, 0.f);
    const auto sample = dir.path / ("s" + std::to_string(i));
    std::filesystem::create_directories(sample);
    ir::save_npy(t, (sample / "X.npy").string());
  }
  ir::Model g = net(), r = net();
  test::run_quantize(g, {{"calib", dir.path.string()}, {"algorithm", "gptq"}});
  test::run_quantize(r, {{"calib", dir.path.string()}, {"algorithm", "rtn"}});
  const auto a = codes_of(g, "W1"), b = codes_of(r, "W1");
  int zeros = 0, changed = 0;
  for (int o = 0; o < 16; ++o)
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < 9; ++k) {
        const size_t at = static_cast<size_t>((o * 4 + i) * 9 + k);
        if (i == 0) {
          CHECK(a[at] == b[at]);  // not zeroed, not moved
          zeros += a[at] == 0 ? 1 : 0;
        } else {
          changed += a[at] != b[at] ? 1 : 0;
        }
      }
  CHECK(zeros < 16 * 9);
  CHECK(changed > 0);
}

TEST_CASE("quantize algorithm: gptq needs calibration; dynamic mode refuses it; gptq_* need gptq") {
  ir::Model m = net();
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "dynamic"}, {"algorithm", "gptq"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"algorithm", "rtn"}, {"gptq_damp", "0.1"}, {"calib", "x"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"algorithm", "closest"}, {"calib", "x"}}), UsageError);
  // mode=dynamic with the default (auto) rounds to nearest and needs no data.
  ir::Model d = net();
  CHECK_NOTHROW(test::run_quantize(d, {{"mode", "dynamic"}}));
}
