// quantize{mode=weight_only awq=true} (quantize/awq.h) on a block whose MatMul inputs have a few
// channels of large magnitude (an RMSNorm-style Mul by a gamma with two large entries, and a Relu
// output): int4 output error falls clearly below plain rounding on samples not calibrated on, the
// gamma takes 1/s with no node added while the Relu output gets one inserted Mul (its float reader
// keeps the unscaled value), the clip search narrows some blocks, the scales alone keep the float
// model, replay from the record (scales and clips) is
// byte-identical with no data, and bad options or records are refused.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/graph_builder.h"
#include "support/paths.h"
#include "transforms/quantize/awq.h"
#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kChannels = 64;

/// x[2, 16, 64] -> Mul by gamma (channels 5 and 40 large) -> h -> MatMul proj_a (Wa[64, 24]), proj_b (Wb[64, 16])
/// x -> Relu -> t (channel 9 of x scaled up by the gamma-free path: t reads x directly)
///   -> MatMul proj_c (Wc[64, 8]) and Sigmoid (a float reader)
ir::Model awq_block() {
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {2, 16, kChannels});
  ir::Tensor gamma = test::random_tensor({kChannels}, 31, 0.5f, 1.5f);
  gamma.mutable_data<float>()[5] = 12.f;
  gamma.mutable_data<float>()[40] = -9.f;
  auto& norm = test::add_node(g, "Mul", "norm_gamma", {&x, &g.add_initializer("gamma", std::move(gamma))}, {"h"}, 17);
  auto& a = test::add_node(g, "MatMul", "proj_a", {norm.outputs[0], &test::add_random_init(g, "Wa", {kChannels, 24}, 32)},
                           {"ya"}, 17);
  auto& b = test::add_node(g, "MatMul", "proj_b", {norm.outputs[0], &test::add_random_init(g, "Wb", {kChannels, 16}, 33)},
                           {"yb"}, 17);
  auto& relu = test::add_node(g, "Relu", "relu", {&x}, {"t"}, 17);
  auto& c = test::add_node(g, "MatMul", "proj_c", {relu.outputs[0], &test::add_random_init(g, "Wc", {kChannels, 8}, 34)},
                           {"yc"}, 17);
  auto& sig = test::add_node(g, "Sigmoid", "gate", {relu.outputs[0]}, {"ys"}, 17);
  for (auto* n : {&a, &b, &c, &sig}) test::mark_output(g, *n->outputs[0]);
  return m;
}

/// One input: x with channel 9 (and, through gamma, 5 and 40) larger than the rest.
ir::Tensor sample_x(uint32_t seed) {
  ir::Tensor t = test::random_tensor({2, 16, kChannels}, seed, -1.f, 1.f);
  auto v = t.mutable_data<float>();
  for (size_t i = 9; i < v.size(); i += kChannels) v[i] = v[i] * 10.f + 10.f;
  return t;
}

struct Samples {
  test::TempDir dir{"mcc-awq"};
  Samples(int n, uint32_t seed) {
    for (int i = 0; i < n; ++i) {
      std::string name = "s";  // (appended: GCC 12 warns on "s" + std::to_string(i), a false -Wrestrict)
      name += std::to_string(i);
      const fs::path s = dir.path / name;
      fs::create_directories(s);
      ir::save_npy(sample_x(seed + static_cast<uint32_t>(i)), (s / "x.npy").string());
    }
  }
  std::string path() const { return dir.path.string(); }
};

/// sqrt(sum |a - b|^2 / sum |b|^2) over the MatMul outputs (the first three), on seeds 1000..1003.
double error_vs(const ir::Model& m, const ir::Model& ref) {
  double num = 0, den = 0;
  for (uint32_t s = 1000; s < 1004; ++s) {
    const std::vector<std::pair<std::string, backends::RValue>> f{{"x", backends::RValue::of(sample_x(s))}};
    const auto a = test::run_cpu(m, f), b = test::run_cpu(ref, f);
    for (size_t i = 0; i < 3; ++i)
      for (size_t k = 0; k < b[i].data<float>().size(); ++k) {
        const double d = a[i].data<float>()[k] - b[i].data<float>()[k];
        num += d * d;
        den += static_cast<double>(b[i].data<float>()[k]) * b[i].data<float>()[k];
      }
  }
  return std::sqrt(num / den);
}

const std::vector<std::pair<std::string, std::string>> kInt4{{"mode", "weight_only"}, {"bits", "4"}, {"block_size", "32"}};

std::vector<std::pair<std::string, std::string>> with(std::vector<std::pair<std::string, std::string>> o,
                                                       const std::vector<std::pair<std::string, std::string>>& more) {
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

const json* layer_of(const json& rec, const std::string& activation) {
  for (const auto& l : rec["layers"])
    if (l["activation"] == activation) return &l;
  return nullptr;
}

}  // namespace

TEST_CASE("quantize awq: large-magnitude input channels get finer int4 codes; output error falls below plain rounding") {
  const Samples calib(8, 1);
  const ir::Model ref = awq_block();
  ir::Model plain = awq_block(), awq = awq_block();
  const auto rp = test::run_quantize(plain, kInt4);
  const auto ra = test::run_quantize(awq, with(kInt4, {{"awq", "true"}, {"calib", calib.path()}}));
  const double e_plain = error_vs(plain, ref), e_awq = error_vs(awq, ref);
  MESSAGE("relative int4 output error vs fp32 on samples not calibrated on: rtn " << e_plain << ", awq " << e_awq);
  CHECK(e_awq < 0.8 * e_plain);

  CHECK(ra.stats["awq_sites"] == 2);
  CHECK(ra.stats["awq_readers"] == 3);
  CHECK(ra.stats["awq_inserted_muls"] == 1);
  // The clip search narrowed some blocks.
  CHECK(ra.stats["awq_clipped_blocks"].get<int64_t>() > 0);
  CHECK(ra.record["awq"]["clip_block_size"] == 32);
  CHECK_FALSE(rp.stats.contains("awq_sites"));
  CHECK_FALSE(rp.record.contains("awq"));
  const json& rec = ra.record["awq"];
  CHECK(rec["grid"] == 20);
  CHECK(rec["calibration"]["samples"] == 8);
  CHECK(rec["skipped"].empty());
  const json* h = layer_of(rec, "h");
  const json* t = layer_of(rec, "t");
  REQUIRE(h != nullptr);
  REQUIRE(t != nullptr);
  // The gamma takes 1/s (no node added); the Relu output gets a Mul, its Sigmoid reader keeps the unscaled value.
  CHECK((*h)["scaled_mul"] == "norm_gamma");
  CHECK((*h)["readers"] == json::array({"proj_a", "proj_b"}));
  CHECK((*t)["mul"] == "t_SmoothQuant_Mul");
  CHECK((*t)["float_readers"] == json::array({"gate"}));
  CHECK(test::count_ops(awq, "Mul") == test::count_ops(plain, "Mul") + 1);
  CHECK(awq.graph->find_value("t_unsmoothed") != nullptr);
  // Each site's error on its calibration rows fell, and the loud channels got the largest scales.
  for (const json* l : {h, t}) CHECK((*l)["error"].get<double>() < (*l)["error_plain"].get<double>());
  const auto sh = (*h)["scales"].get<std::vector<float>>();
  const auto st = (*t)["scales"].get<std::vector<float>>();
  for (size_t j = 0; j < sh.size(); ++j)
    if (j != 5 && j != 40 && j != 9) CHECK(sh[j] < std::min(sh[5], sh[40]));
  for (size_t j = 0; j < st.size(); ++j)
    if (j != 9) CHECK(st[j] < st[9]);
}

TEST_CASE("quantize awq: the scales alone keep the float model (awq_clip=false)") {
  const Samples calib(8, 1);
  ir::Model q = awq_block();
  const auto res = test::run_quantize(q, with(kInt4, {{"awq", "true"}, {"awq_clip", "false"}, {"calib", calib.path()}}));
  CHECK(res.stats["awq_clipped_blocks"] == 0);
  const ir::Model ref = awq_block();
  ir::Model f = awq_block();
  const auto applied = transforms::quantize::apply_awq_record(f, res.record["awq"]);
  CHECK(applied.sites == 2);
  CHECK(applied.scaled_muls == 1);
  CHECK(applied.muls == 1);
  const auto s = layer_of(res.record["awq"], "h")->at("scales").get<std::vector<float>>();
  const auto g0 = ref.graph->find_value("gamma")->initializer->data<float>();
  const auto g1 = f.graph->find_value("gamma")->initializer->data<float>();
  const auto w0 = ref.graph->find_value("Wa")->initializer->data<float>();
  const auto w1 = f.graph->find_value("Wa")->initializer->data<float>();
  for (size_t j = 0; j < s.size(); ++j) {
    CHECK(g1[j] == g0[j] / s[j]);
    CHECK(w1[j * 24 + 3] == w0[j * 24 + 3] * s[j]);
  }
  double num = 0, den = 0;
  const std::vector<std::pair<std::string, backends::RValue>> feeds{{"x", backends::RValue::of(sample_x(7))}};
  const auto a = test::run_cpu(f, feeds), b = test::run_cpu(ref, feeds);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < b[i].data<float>().size(); ++k) {
      const double d = a[i].data<float>()[k] - b[i].data<float>()[k];
      num += d * d;
      den += static_cast<double>(b[i].data<float>()[k]) * b[i].data<float>()[k];
    }
  CHECK(std::sqrt(num / den) < 1e-5);
}

TEST_CASE("quantize awq: replay from the record is byte-identical with no data; bad records and options are refused") {
  const Samples calib(8, 1);
  ir::Model a = awq_block();
  const auto res = test::run_quantize(a, with(kInt4, {{"awq", "true"}, {"calib", calib.path()}, {"algorithm", "gptq"}}));
  CHECK(res.record["algorithm"] == "gptq");
  ir::Model b = awq_block();
  const json rec = res.record;
  const auto rr = test::run_quantize(b, {}, &rec);
  CHECK(ir::serialize_model(a) == ir::serialize_model(b));
  CHECK(rr.modified);

  json bad = rec;
  bad["awq"]["layers"][0]["activation"] = "nothing";
  ir::Model c = awq_block();
  CHECK_THROWS_AS(test::run_quantize(c, {}, &bad), ModelError);
  json bad_mul = rec;
  for (auto& l : bad_mul["awq"]["layers"])
    if (l.contains("scaled_mul")) l["scaled_mul"] = "relu";
  ir::Model d = awq_block();
  CHECK_THROWS_AS(test::run_quantize(d, {}, &bad_mul), ModelError);
  json bad_clip = rec;
  for (auto& l : bad_clip["awq"]["layers"])
    if (l.contains("clip")) l["clip"][0]["steps"] = "AAAA";  // 3 steps for many more blocks
  ir::Model f = awq_block();
  CHECK_THROWS_AS(test::run_quantize(f, {}, &bad_clip), ModelError);
  json bad_scale = rec;
  bad_scale["awq"]["layers"][0]["scales"][0] = -1.0;
  ir::Model e = awq_block();
  CHECK_THROWS_AS(test::run_quantize(e, {}, &bad_scale), ModelError);

  ir::Model m = awq_block();
  CHECK_THROWS_AS(test::run_quantize(m, with(kInt4, {{"awq", "true"}})), UsageError);  // no calibration data
  CHECK_THROWS_AS(test::run_quantize(m, {{"awq", "true"}, {"calib", calib.path()}}), UsageError);  // not weight_only
  CHECK_THROWS_AS(test::run_quantize(m, with(kInt4, {{"awq", "true"}, {"calib", calib.path()}, {"awq_grid", "1"}})),
                  UsageError);
}
