// quantize{smooth_quant=ALPHA} (quantize/smooth.h) on a transformer-shaped block whose
// LayerNormalization outputs have outlier channels (two large gamma entries each): the int8 output
// is clearly closer to fp32 than without smoothing, the quantized graph has the same nodes, the
// smoothing alone keeps the float model's outputs, replay from the record is byte-identical with no
// data, ONNX Runtime runs the result, what is left alone is recorded with its reason, and bad
// options or records are refused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/graph_builder.h"
#include "support/ort.h"
#include "support/paths.h"
#include "support/run_mcc.h"
#include "transforms/quantize/quantize_test_util.h"
#include "transforms/quantize/smooth.h"

using namespace mcc;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

constexpr int kSamples = 8;

/// gamma in [0.5, 1.5] with channels 3 and 11 (or `a`, `b`) set to large values: the outliers.
ir::Value& outlier_gamma(ir::Graph& g, const std::string& name, uint32_t seed, int64_t a = 3, int64_t b = 11) {
  ir::Tensor t = test::random_tensor({16}, seed, 0.5f, 1.5f);
  t.mutable_data<float>()[static_cast<size_t>(a)] = 40.f;
  t.mutable_data<float>()[static_cast<size_t>(b)] = -60.f;
  return g.add_initializer(name, std::move(t));
}

/// A weight [K, N] (or [N, K] with `transposed`) whose input channels a and b are scaled down by the
/// outliers' gammas, as trained models do: every channel then matters as much to the output, and
/// the outliers' int8 range drowns the others.
ir::Value& damped_weight(ir::Graph& g, const std::string& name, std::vector<int64_t> dims, uint32_t seed, int64_t a, int64_t b,
                         bool transposed = false) {
  ir::Tensor t = test::random_tensor(dims, seed);
  auto v = t.mutable_data<float>();
  const int64_t rows = dims[0], cols = dims[1];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t ch = transposed ? k : i;
      if (ch == a) v[static_cast<size_t>(i * cols + k)] /= 40.f;
      if (ch == b) v[static_cast<size_t>(i * cols + k)] /= 60.f;
    }
  return g.add_initializer(name, std::move(t));
}

/// x[2, 8, 16] -> LayerNormalization ln1 -> h -> MatMul proj_q (Wq[16, 16]), MatMul proj_k (Wk)
///   -> Y1 = Add(q, k)
/// z[4, 16] -> LayerNormalization ln2 -> u -> Gemm fc (Wg[8, 16], C[8], transB=1) -> Y2
/// With `extra`: ln3 (x) read by a MatMul and a Relu (the Relu gets a float copy of ln3), ln4
/// (x, ln3's gamma) read by a MatMul whose weight another MatMul of x also reads, and ln5 read by
/// a MatMul of two activations (both left alone).
ir::Model smooth_block(bool extra = false) {
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {2, 8, 16});
  ir::Value& z = test::add_input(g, "z", {4, 16});
  auto& ln1 = test::add_node(g, "LayerNormalization", "ln1",
                             {&x, &outlier_gamma(g, "gamma1", 11), &test::add_random_init(g, "beta1", {16}, 12, -0.1f, 0.1f)},
                             {"h"}, 17, {test::attr_i("axis", -1)});
  auto& q = test::add_node(g, "MatMul", "proj_q", {ln1.outputs[0], &damped_weight(g, "Wq", {16, 16}, 13, 3, 11)}, {"q"}, 17);
  auto& k = test::add_node(g, "MatMul", "proj_k", {ln1.outputs[0], &damped_weight(g, "Wk", {16, 16}, 14, 3, 11)}, {"k"}, 17);
  auto& y1 = test::add_node(g, "Add", "mix", {q.outputs[0], k.outputs[0]}, {"Y1"}, 17);
  auto& ln2 = test::add_node(g, "LayerNormalization", "ln2", {&z, &outlier_gamma(g, "gamma2", 15, 5, 9)}, {"u"}, 17,
                             {test::attr_i("axis", 1)});
  auto& fc = test::add_node(g, "Gemm", "fc",
                            {ln2.outputs[0], &damped_weight(g, "Wg", {8, 16}, 16, 5, 9, true),
                             &test::add_random_init(g, "C", {8}, 17, -0.5f, 0.5f)},
                            {"Y2"}, 17, {test::attr_i("transB", 1)});
  test::mark_output(g, *y1.outputs[0]);
  test::mark_output(g, *fc.outputs[0]);
  if (extra) {
    auto& ln3 = test::add_node(g, "LayerNormalization", "ln3", {&x, &outlier_gamma(g, "gamma3", 18)}, {"h3"}, 17);
    auto& m3 = test::add_node(g, "MatMul", "proj_3", {ln3.outputs[0], &test::add_random_init(g, "W3", {16, 4}, 19)}, {"y3"}, 17);
    auto& r3 = test::add_node(g, "Relu", "relu_3", {ln3.outputs[0]}, {"r3"}, 17);
    auto& ln4 = test::add_node(g, "LayerNormalization", "ln4", {&x, g.find_value("gamma3")}, {"h4"}, 17);
    ir::Value& w4 = test::add_random_init(g, "W4", {16, 4}, 20);
    auto& m4 = test::add_node(g, "MatMul", "proj_4", {ln4.outputs[0], &w4}, {"y4"}, 17);
    auto& m5 = test::add_node(g, "MatMul", "proj_5", {&x, &w4}, {"y5"}, 17);
    auto& ln5 = test::add_node(g, "LayerNormalization", "ln5", {&x, &outlier_gamma(g, "gamma5", 23)}, {"h5"}, 17);
    auto& xt = test::add_node(g, "Transpose", "xt", {&x}, {"x_t"}, 17, {test::attr_ints("perm", {0, 2, 1})});
    auto& m6 = test::add_node(g, "MatMul", "att_5", {ln5.outputs[0], xt.outputs[0]}, {"y6"}, 17);
    auto& m7 = test::add_node(g, "MatMul", "proj_7", {ln5.outputs[0], &test::add_random_init(g, "W7", {16, 4}, 24)}, {"y7"}, 17);
    for (auto* n : {&m3, &r3, &m4, &m5, &m6, &m7}) test::mark_output(g, *n->outputs[0]);
  }
  return m;
}

std::vector<std::pair<std::string, ir::Tensor>> sample(uint32_t seed) {
  return {{"x", test::random_tensor({2, 8, 16}, seed, -2.f, 2.f)}, {"z", test::random_tensor({4, 16}, seed + 500, -2.f, 2.f)}};
}

std::vector<std::pair<std::string, backends::RValue>> feeds(uint32_t seed) {
  std::vector<std::pair<std::string, backends::RValue>> f;
  for (auto& [n, t] : sample(seed)) f.emplace_back(n, backends::RValue::of(t));
  return f;
}

/// A folder of `n` samples (x.npy and, with `z`, z.npy), seeds from `seed`.
struct Samples {
  test::TempDir dir{"mcc-smooth"};
  Samples(int n, uint32_t seed, bool z = true) {
    for (int i = 0; i < n; ++i) {
      std::string name = "s";
      name += std::to_string(i);
      const fs::path s = dir.path / name;
      fs::create_directories(s);
      for (auto& [name, t] : sample(seed + static_cast<uint32_t>(i)))
        if (z || name == "x") ir::save_npy(t, (s / (name + ".npy")).string());
    }
  }
  std::string path() const { return dir.path.string(); }
};

/// sqrt(sum |a - b|^2 / sum |b|^2) over every output.
double relative_error(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < b[i].data<float>().size(); ++k) {
      const double d = a[i].data<float>()[k] - b[i].data<float>()[k];
      num += d * d;
      den += static_cast<double>(b[i].data<float>()[k]) * b[i].data<float>()[k];
    }
  return std::sqrt(num / den);
}

/// Relative error of `m` against `ref` over the samples of seeds 1000.. (not calibrated on).
double error_vs(const ir::Model& m, const ir::Model& ref) {
  double worst = 0;
  for (uint32_t s = 1000; s < 1004; ++s) worst = std::max(worst, relative_error(test::run_cpu(m, feeds(s)), test::run_cpu(ref, feeds(s))));
  return worst;
}

const json* layer_of(const json& rec, const std::string& ln) {
  for (const auto& l : rec["layers"])
    if (l["layer_norm"] == ln) return &l;
  return nullptr;
}

std::string skip_reason(const json& rec, const std::string& ln) {
  for (const auto& s : rec["skipped"])
    if (s["layer_norm"] == ln) return s["reason"].get<std::string>();
  return "";
}

}  // namespace

TEST_CASE("quantize smooth_quant=0.5: outlier channels move into the weights; int8 error falls, nodes stay the same") {
  const Samples calib(kSamples, 1);
  const ir::Model ref = smooth_block();
  ir::Model plain = smooth_block(), smooth = smooth_block();
  const auto rp = test::run_quantize(plain, {{"calib", calib.path()}});
  const auto rs = test::run_quantize(smooth, {{"calib", calib.path()}, {"smooth_quant", "0.5"}});

  // (1) The int8 model is clearly closer to fp32.
  const double e_plain = error_vs(plain, ref), e_smooth = error_vs(smooth, ref);
  MESSAGE("relative output error vs fp32: plain int8 " << e_plain << ", smooth_quant=0.5 " << e_smooth);
  CHECK(e_smooth < 0.35 * e_plain);
  CHECK(e_smooth < 0.05);

  // (2) The same graph: smoothing only changes constants.
  CHECK(smooth.graph->nodes().size() == plain.graph->nodes().size());
  for (const char* op : {"QuantizeLinear", "DequantizeLinear", "LayerNormalization", "MatMul", "Gemm"})
    CHECK(test::count_ops(smooth, op) == test::count_ops(plain, op));
  CHECK(smooth.graph->initializers.size() == plain.graph->initializers.size());

  // Stats and record.
  CHECK(rs.stats["smooth_quant_layers"] == 2);
  CHECK(rs.stats["smooth_quant_readers"] == 3);
  CHECK_FALSE(rp.stats.contains("smooth_quant_layers"));
  CHECK_FALSE(rp.record.contains("smooth_quant"));
  const json& sq = rs.record["smooth_quant"];
  CHECK(sq["alpha"] == 0.5);
  CHECK(sq["skipped"].empty());
  const json* l1 = layer_of(sq, "ln1");
  const json* l2 = layer_of(sq, "ln2");
  REQUIRE(l1 != nullptr);
  REQUIRE(l2 != nullptr);
  CHECK((*l1)["readers"] == json::array({"proj_q", "proj_k"}));
  CHECK((*l2)["readers"] == json::array({"fc"}));
  REQUIRE((*l1)["scales"].size() == 16);
  REQUIRE((*l2)["scales"].size() == 16);
  // The outlier channels get the largest scales; the smoothed maximum is far below the original.
  const auto s1 = (*l1)["scales"].get<std::vector<float>>();
  for (size_t j = 0; j < s1.size(); ++j)
    if (j != 3 && j != 11) CHECK(s1[j] < std::min(s1[3], s1[11]));
  CHECK((*l1)["smoothed_max"].get<double>() < 0.25 * (*l1)["activation_max"].get<double>());
  CHECK((*l2)["smoothed_max"].get<double>() < 0.25 * (*l2)["activation_max"].get<double>());
}

TEST_CASE("quantize smooth_quant: the smoothing alone keeps the float model (gamma/s, beta/s, s*W rows)") {
  const Samples calib(kSamples, 1);
  ir::Model q = smooth_block();
  const auto res = test::run_quantize(q, {{"calib", calib.path()}, {"smooth_quant", "0.8"}});
  const ir::Model ref = smooth_block();
  ir::Model f = smooth_block();
  const auto applied = transforms::quantize::apply_smooth_record(f, res.record["smooth_quant"]);
  CHECK(applied.layers == 2);
  CHECK(applied.readers == 3);
  CHECK(f.graph->nodes().size() == ref.graph->nodes().size());
  // Constants follow the formulas exactly (float arithmetic).
  const auto s1 = layer_of(res.record["smooth_quant"], "ln1")->at("scales").get<std::vector<float>>();
  const auto s2 = layer_of(res.record["smooth_quant"], "ln2")->at("scales").get<std::vector<float>>();
  const auto g0 = ref.graph->find_value("gamma1")->initializer->data<float>();
  const auto g1 = f.graph->find_value("gamma1")->initializer->data<float>();
  const auto w0 = ref.graph->find_value("Wg")->initializer->data<float>();
  const auto w1 = f.graph->find_value("Wg")->initializer->data<float>();
  for (size_t j = 0; j < 16; ++j) CHECK(g1[j] == g0[j] / s1[j]);
  for (size_t n = 0; n < 8; ++n)
    for (size_t j = 0; j < 16; ++j) CHECK(w1[n * 16 + j] == w0[n * 16 + j] * s2[j]);  // transB: column j
  // Outputs equal up to float rounding.
  for (uint32_t s = 1; s < 4; ++s) {
    const auto a = test::run_cpu(f, feeds(s)), b = test::run_cpu(ref, feeds(s));
    CHECK(relative_error(a, b) < 1e-5);
  }
}

TEST_CASE("quantize smooth_quant: replay from the record is byte-identical with no data") {
  const Samples calib(kSamples, 1);
  ir::Model a = smooth_block();
  const auto res = test::run_quantize(a, {{"calib", calib.path()}, {"smooth_quant", "0.5"}});
  ir::Model b = smooth_block();
  const json rec = res.record;
  const auto rr = test::run_quantize(b, {{"smooth_quant", "0.5"}}, &rec);
  CHECK(rr.stats == res.stats);
  CHECK(ir::serialize_model(a) == ir::serialize_model(b));

  SUBCASE("a record that does not fit the model is a ModelError") {
    json bad = rec;
    bad["smooth_quant"]["layers"][0]["layer_norm"] = "nothing";
    ir::Model c = smooth_block();
    CHECK_THROWS_AS(test::run_quantize(c, {}, &bad), ModelError);
    json short_scales = rec;
    short_scales["smooth_quant"]["layers"][0]["scales"].erase(0);
    ir::Model d = smooth_block();
    CHECK_THROWS_AS(test::run_quantize(d, {}, &short_scales), ModelError);
    json bad_reader = rec;
    bad_reader["smooth_quant"]["layers"][1]["readers"] = json::array({"proj_q"});
    ir::Model e = smooth_block();
    CHECK_THROWS_AS(test::run_quantize(e, {}, &bad_reader), ModelError);
  }
}

TEST_CASE("quantize smooth_quant: a float reader gets a copy of the LayerNormalization; what is left alone is recorded") {
  const Samples calib(kSamples, 1);
  ir::Model m = smooth_block(/*extra=*/true);
  const ir::Model ref = smooth_block(true);
  // proj_5 stays float, so x is not quantized and float readers of LayerNormalizations of x see floats.
  const auto res = test::run_quantize(m, {{"calib", calib.path()}, {"smooth_quant", "0.5"}, {"exclude", "proj_5"}});
  const json& sq = res.record["smooth_quant"];
  CHECK(skip_reason(sq, "ln4").find("also read by 'proj_5'") != std::string::npos);
  CHECK(skip_reason(sq, "ln5").find("'att_5' (MatMul), whose weight is not a float32 constant") != std::string::npos);
  CHECK(skip_reason(sq, "ln3").empty());
  CHECK(res.stats["smooth_quant_layers"] == 3);
  CHECK(res.stats["smooth_quant_float_copies"] == 1);
  // ln3: proj_3 reads the smoothed output, relu_3 a float copy with the original gamma.
  const json* l3 = layer_of(sq, "ln3");
  REQUIRE(l3 != nullptr);
  CHECK((*l3)["readers"] == json::array({"proj_3"}));
  CHECK((*l3)["float_readers"] == json::array({"relu_3"}));
  CHECK((*l3)["float_copy"] == "ln3_float");
  CHECK((*l3)["copied"] == json::array({"gamma3"}));  // shared by ln3 (smoothed), its copy and ln4
  CHECK(test::count_ops(m, "LayerNormalization") == 6);
  const ir::Value* h3f = m.graph->find_value("h3_float");
  REQUIRE(h3f != nullptr);
  REQUIRE(h3f->producer != nullptr);
  CHECK(h3f->producer->input(1)->name == "gamma3");
  CHECK(m.graph->find_value("r3")->producer->input(0) == h3f);
  // The Relu output is exactly the float model's; gamma3 itself is unchanged (ln4 and the copy read it).
  const auto got = test::run_cpu(m, feeds(1000)), want = test::run_cpu(ref, feeds(1000));
  CHECK(test::max_abs_diff({got[3]}, {want[3]}) == 0.0);
  CHECK(std::memcmp(m.graph->find_value("gamma3")->initializer->raw(), ref.graph->find_value("gamma3")->initializer->raw(), 64) == 0);
  // Replay redoes the copy: the same bytes.
  ir::Model again = smooth_block(true);
  const json rec = res.record;
  test::run_quantize(again, {{"exclude", "proj_5"}}, &rec);
  CHECK(ir::serialize_model(again) == ir::serialize_model(m));

  SUBCASE("a gamma shared by two smoothed LayerNormalizations is copied for the first") {
    ir::Model s = test::empty_model(17);
    ir::Graph& g = *s.graph;
    ir::Value& x = test::add_input(g, "x", {2, 8, 16});
    ir::Value& gamma = outlier_gamma(g, "gamma", 11);
    auto& a = test::add_node(g, "LayerNormalization", "lna", {&x, &gamma}, {"ha"}, 17);
    auto& b = test::add_node(g, "LayerNormalization", "lnb", {&x, &gamma}, {"hb"}, 17);
    auto& ma = test::add_node(g, "MatMul", "ma", {a.outputs[0], &test::add_random_init(g, "Wa", {16, 4}, 21)}, {"ya"}, 17);
    auto& mb = test::add_node(g, "MatMul", "mb", {b.outputs[0], &test::add_random_init(g, "Wb", {16, 4}, 22, -9.f, 9.f)}, {"yb"}, 17);
    test::mark_output(g, *ma.outputs[0]);
    test::mark_output(g, *mb.outputs[0]);
    const std::vector<std::pair<std::string, backends::RValue>> fx = {feeds(3)[0]};
    const auto want = test::run_cpu(s, fx);
    const Samples xs(kSamples, 1, /*z=*/false);
    const auto r = test::run_quantize(s, {{"calib", xs.path()}, {"smooth_quant", "0.5"}, {"op_types", "MatMul"}});
    CHECK(r.stats["smooth_quant_layers"] == 2);
    const json* la = layer_of(r.record["smooth_quant"], "lna");
    REQUIRE(la != nullptr);
    CHECK((*la)["copied"] == json::array({"gamma"}));
    CHECK(layer_of(r.record["smooth_quant"], "lnb")->at("copied").empty());
    CHECK(g.find_value("gamma_smoothed") != nullptr);
    CHECK(relative_error(test::run_cpu(s, fx), want) < 0.05);
  }
}

TEST_CASE("quantize smooth_quant: bad values, weight_only mode and a missing calibration folder are usage errors") {
  ir::Model m = smooth_block();
  const Samples calib(2, 1);
  CHECK_THROWS_AS(test::run_quantize(m, {{"calib", calib.path()}, {"smooth_quant", "-0.5"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"calib", calib.path()}, {"smooth_quant", "1.5"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"calib", calib.path()}, {"smooth_quant", "nan"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "dynamic"}, {"smooth_quant", "0.5"}}), UsageError);  // no calib
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "weight_only"}, {"calib", calib.path()}, {"smooth_quant", "0.5"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"smooth_quant", "0.5"}}), UsageError);
  CHECK(test::count_ops(m, "QuantizeLinear") == 0);
  // smooth_quant=0 is off and alpha = 1 is allowed.
  ir::Model off = smooth_block(), one = smooth_block();
  CHECK_FALSE(test::run_quantize(off, {{"calib", calib.path()}, {"smooth_quant", "0"}}).record.contains("smooth_quant"));
  CHECK(test::run_quantize(one, {{"calib", calib.path()}, {"smooth_quant", "1"}}).stats["smooth_quant_layers"] == 2);
}

TEST_CASE("mcc quantize --smooth-quant: the state records the scales and replays byte-identically; ONNX Runtime runs the model") {
  test::TempDir tmp("mcc-smooth-cli");
  const std::string model = (tmp.path / "block.onnx").string();
  ir::save_model(smooth_block(), model);
  const Samples calib(kSamples, 1);
  const Samples eval(4, 1000);
  const std::string q = (tmp.path / "q.onnx").string();
  const auto r = test::run_mcc({"quantize", model, "-o", q, "--calib", calib.path(), "--smooth-quant", "0.5", "--no-check",
                                "--threads", "1"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json state = json::parse(test::slurp(tmp.path / "q.mcc.json"));
  bool recorded = false;
  for (const auto& s : state["stages"])
    if (s["pass"] == "quantize") recorded = s["record"].contains("smooth_quant") && s["stats"]["smooth_quant_layers"] == 2;
  CHECK(recorded);
  const std::string again = (tmp.path / "again.onnx").string();
  REQUIRE(test::run_mcc({"quantize", model, "-o", again, "--state", (tmp.path / "q.mcc.json").string()}).code == 0);
  CHECK(test::slurp(again) == test::slurp(q));
  CHECK(test::run_mcc({"quantize", model, "-o", q, "--calib", calib.path(), "--smooth-quant", "2"}).code == 2);
  CHECK(test::run_mcc({"quantize", model, "-o", q, "--mode", "dynamic", "--smooth-quant", "0.5"}).code == 2);

  // ONNX Runtime runs the smoothed QDQ model; its outputs are as close to fp32 as mcc's cpu backend's.
  REQUIRE_MESSAGE(test::have_onnxruntime(), test::kOrtMissing);
  REQUIRE(test::write_ort_outputs(q, eval.path()));
  const ir::Model ref = smooth_block();
  const ir::Model qm = ir::load_model(q);
  for (int i = 0; i < 4; ++i) {
    const fs::path d = eval.dir.path / ("s" + std::to_string(i));
    const std::vector<ir::Tensor> ort = {ir::load_npy((d / "output_0.npy").string()), ir::load_npy((d / "output_1.npy").string())};
    const auto want = test::run_cpu(ref, feeds(1000 + static_cast<uint32_t>(i)));
    const auto mine = test::run_cpu(qm, feeds(1000 + static_cast<uint32_t>(i)));
    CHECK(relative_error(ort, want) < 0.05);
    CHECK(relative_error(ort, mine) < 0.01);
  }
}

TEST_CASE("quantize smooth_quant: an input no LayerNormalization produces is smoothed through an inserted Mul") {
  // a = x * c (c with two outlier channels, as a GELU output or an attention context has them);
  // Y = MatMul(a, W) with W's rows for those channels damped.
  auto build = [] {
    ir::Model m = test::empty_model(17);
    ir::Graph& g = *m.graph;
    ir::Value& x = test::add_input(g, "x", {2, 8, 16});
    test::add_input(g, "z", {4, 16});  // unread: the samples of this file carry it
    auto& scale = test::add_node(g, "Mul", "channels", {&x, &outlier_gamma(g, "c", 31)}, {"a"}, 17);
    auto& mm = test::add_node(g, "MatMul", "proj", {scale.outputs[0], &damped_weight(g, "W", {16, 12}, 32, 3, 11)}, {"Y"}, 17);
    auto& other = test::add_node(g, "Relu", "relu", {scale.outputs[0]}, {"R"}, 17);  // a float reader of a
    test::mark_output(g, *mm.outputs[0]);
    test::mark_output(g, *other.outputs[0]);
    return m;
  };
  const Samples calib(kSamples, 1);
  const ir::Model ref = build();
  ir::Model plain = build(), smooth = build(), folded_only = build();
  test::run_quantize(plain, {{"calib", calib.path()}, {"op_types", "MatMul"}});
  const auto rs = test::run_quantize(smooth, {{"calib", calib.path()}, {"op_types", "MatMul"}, {"smooth_quant", "0.5"}});
  const auto rf = test::run_quantize(folded_only, {{"calib", calib.path()}, {"op_types", "MatMul"}, {"smooth_quant", "0.5"},
                                                   {"smooth_quant_insert", "false"}});
  CHECK(rs.stats["smooth_quant_muls"] == 1);
  CHECK_FALSE(rf.stats.contains("smooth_quant_muls"));
  CHECK(test::count_ops(smooth, "Mul") == 2);
  CHECK(test::count_ops(folded_only, "Mul") == 1);
  // The Mul's output keeps the name 'a' and carries the quantization; the Relu reads the unsmoothed value.
  const ir::Value* a = smooth.graph->find_value("a");
  REQUIRE(a != nullptr);
  REQUIRE(a->producer != nullptr);
  CHECK(a->producer->op_type == "DequantizeLinear");  // the smoothed value, quantized
  const ir::Node* relu = smooth.graph->find_value("R")->producer;
  CHECK(relu->inputs[0]->name == "a_unsmoothed");
  const json& sq = rs.record["smooth_quant"];
  REQUIRE(sq["layers"].size() == 1);
  CHECK(sq["layers"][0]["activation"] == "a");
  CHECK(sq["layers"][0]["readers"] == json::array({"proj"}));
  CHECK(sq["layers"][0].contains("alpha"));  // chosen per site (smooth_quant_search=true)
  const double e_plain = error_vs(plain, ref), e_smooth = error_vs(smooth, ref);
  MESSAGE("relative output error vs fp32: plain int8 " << e_plain << ", with the inserted Mul " << e_smooth);
  CHECK(e_smooth < 0.5 * e_plain);
  CHECK(test::max_abs_diff({test::run_cpu(smooth, feeds(5))[1]}, {test::run_cpu(ref, feeds(5))[1]}) == 0.0);  // Relu: float
  // Replay without data: the same model, byte for byte.
  ir::Model again = build();
  const json rec = rs.record;
  test::run_quantize(again, {{"op_types", "MatMul"}, {"smooth_quant", "0.5"}}, &rec);
  CHECK(ir::serialize_model(again) == ir::serialize_model(smooth));
  // A recorded activation the model lacks is refused.
  json bad = rs.record;
  bad["smooth_quant"]["layers"][0]["activation"] = "nothing";
  ir::Model m3 = build();
  CHECK_THROWS_AS(test::run_quantize(m3, {{"op_types", "MatMul"}}, &bad), ModelError);
}

TEST_CASE("quantize mode=dynamic smooth_quant: LayerNormalization outliers folded before the run-time quantization; replay") {
  const Samples calib(kSamples, 1);
  const ir::Model ref = smooth_block();
  ir::Model plain = smooth_block(), smooth = smooth_block();
  test::run_quantize(plain, {{"mode", "dynamic"}});
  const auto rs = test::run_quantize(smooth, {{"mode", "dynamic"}, {"calib", calib.path()}, {"smooth_quant", "0.5"}});
  CHECK(rs.stats["smooth_quant_layers"] == 2);
  CHECK_FALSE(rs.stats.contains("smooth_quant_muls"));  // dynamic mode folds into LayerNormalizations only
  CHECK(test::count_ops(smooth, "MatMulInteger") == test::count_ops(plain, "MatMulInteger"));
  CHECK(smooth.graph->nodes().size() == plain.graph->nodes().size());
  const double e_plain = error_vs(plain, ref), e_smooth = error_vs(smooth, ref);
  MESSAGE("relative output error vs fp32: dynamic int8 " << e_plain << ", with smooth_quant " << e_smooth);
  CHECK(e_smooth < 0.5 * e_plain);
  ir::Model again = smooth_block();
  const json rec = rs.record;
  test::run_quantize(again, {{"mode", "dynamic"}}, &rec);
  CHECK(ir::serialize_model(again) == ir::serialize_model(smooth));
}
