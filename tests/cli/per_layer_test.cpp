// End-to-end tests of `mcc eval --per-layer`: a small CNN with one layer that quantizes badly (a
// Conv whose weights have a huge outlier on an input channel that is always zero, so every
// per-channel weight scale is set by the outlier and the useful weights round to 0) between
// well-behaved layers. `mcc quantize` breaks it; the per-layer table must name that Conv as the
// layer that introduces the error, and re-quantizing with the suggested exclusion (pasted as a
// pipeline stage) must bring the output back above the int8 bar. Also: fp16 models compare with
// their fp32 reference, and bad requests exit 2.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;

namespace {

using mcc::ir::Attribute;
using mcc::ir::AttrKind;
using mcc::ir::DType;
using mcc::ir::Tensor;

std::vector<float> uniform(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

mcc::ir::Value& input(mcc::ir::Graph& g, const std::string& name, std::vector<int64_t> dims) {
  auto& v = g.add_value(name);
  v.is_graph_input = v.has_type = true;
  v.dtype = DType::F32;
  v.shape = mcc::ir::Shape::of(dims);
  g.inputs.push_back(&v);
  return v;
}

mcc::ir::Value* conv(mcc::ir::Graph& g, const std::string& name, mcc::ir::Value* x, std::vector<float> w,
                     std::vector<float> b, int64_t cout, int64_t cin) {
  auto& W = g.add_initializer(name + ".weight", Tensor::from_vector<float>({cout, cin, 3, 3}, w));
  auto& B = g.add_initializer(name + ".bias", Tensor::from_vector<float>({cout}, b));
  auto& n = g.add_node("Conv", "", name, {x, &W, &B}, {name + "_out"});
  n.since_version = 13;
  n.attrs = {Attribute{"pads", AttrKind::Ints, std::vector<int64_t>{1, 1, 1, 1}, "", "", ""}};
  return n.outputs[0];
}

mcc::ir::Value* unary(mcc::ir::Graph& g, const std::string& op, const std::string& name, mcc::ir::Value* x) {
  auto& n = g.add_node(op, "", name, {x}, {name + "_out"});
  n.since_version = 13;
  return n.outputs[0];
}

/// X[1,4,8,8] -> conv1 -> relu1 -> conv2 (bad) -> relu2 -> conv3 -> relu3 -> GAP -> Flatten -> fc -> Y[1,10].
/// conv1's channel 0 has bias -50, so relu1's channel 0 is always 0; conv2 reads that dead channel
/// with weights of 40, which set every per-channel scale to 40/127 while its useful weights are
/// below 0.25: int8 rounds most of them to 0.
mcc::ir::Model bad_layer_model() {
  mcc::ir::Model m;
  m.ir_version = 8;
  m.opset_imports.push_back({"", 13});
  m.graph = std::make_unique<mcc::ir::Graph>();
  auto& g = *m.graph;
  g.name = "bad_layer";
  auto* x = &input(g, "X", {1, 4, 8, 8});
  auto b1 = uniform(8, 2, -0.1f, 0.1f);
  b1[0] = -50.f;
  auto* r1 = unary(g, "Relu", "relu1", conv(g, "conv1", x, uniform(8 * 4 * 9, 1, -0.5f, 0.5f), b1, 8, 4));
  auto w2 = uniform(8 * 8 * 9, 3, -0.25f, 0.25f);
  for (int64_t o = 0; o < 8; ++o)
    for (int64_t k = 0; k < 9; ++k) w2[static_cast<size_t>((o * 8 + 0) * 9 + k)] = (o % 2 ? 40.f : -40.f);
  auto* r2 = unary(g, "Relu", "relu2", conv(g, "conv2", r1, w2, uniform(8, 4, 0.f, 0.1f), 8, 8));
  auto* r3 = unary(g, "Relu", "relu3", conv(g, "conv3", r2, uniform(8 * 8 * 9, 5, -0.3f, 0.3f), uniform(8, 6, 0.f, 0.1f), 8, 8));
  auto* gap = unary(g, "GlobalAveragePool", "gap", r3);
  auto& fl = g.add_node("Flatten", "", "flatten", {gap}, {"flat"});
  fl.since_version = 13;
  auto& W4 = g.add_initializer("fc.weight", Tensor::from_vector<float>({10, 8}, uniform(80, 7, -1.f, 1.f)));
  auto& B4 = g.add_initializer("fc.bias", Tensor::from_vector<float>({10}, uniform(10, 8, -0.1f, 0.1f)));
  auto& fc = g.add_node("Gemm", "", "fc", {fl.outputs[0], &W4, &B4}, {"Y"});
  fc.since_version = 13;
  fc.attrs = {Attribute{"transB", AttrKind::Int, int64_t{1}, "", "", ""}};
  auto* y = fc.outputs[0];
  y->has_type = true;
  y->dtype = DType::F32;
  y->shape = mcc::ir::Shape::of({1, 10});
  g.outputs.push_back(y);
  return m;
}

/// `count` NumPy sample folders with seeded uniform X.
void write_samples(const fs::path& dir, int count, uint32_t seed) {
  for (int i = 0; i < count; ++i) {
    const fs::path d = dir / ("s" + std::to_string(i));
    fs::create_directories(d);
    mcc::ir::save_npy(Tensor::from_vector<float>({1, 4, 8, 8}, uniform(256, seed + static_cast<uint32_t>(i), -1.f, 1.f)),
                      (d / "X.npy").string());
  }
}

struct Fixture {
  mcc::test::TempDir tmp{"mcc-per-layer"};
  std::string fp32, calib, eval;
  Fixture() {
    fp32 = (tmp.path / "model.onnx").string();
    mcc::ir::save_model(bad_layer_model(), fp32);
    calib = (tmp.path / "calib").string();
    eval = (tmp.path / "eval").string();
    write_samples(calib, 8, 100);
    write_samples(eval, 6, 900);
  }
  std::string path(const std::string& f) const { return (tmp.path / f).string(); }
};

const nlohmann::json* layer_of(const nlohmann::json& layers, const std::string& value) {
  for (const auto& l : layers)
    if (l["value"] == value) return &l;
  return nullptr;
}

}  // namespace

TEST_CASE("per-layer: the badly quantized Conv ranks first by introduced error; its suggested exclusion restores accuracy") {
  Fixture f;
  // Without bias correction (which hides much of this layer's damage behind the global pooling)
  // and with weights rounded to nearest (GPTQ's codes compensate part of it too), the badly
  // ranged conv2 breaks the model.
  auto r = run_mcc({"quantize", f.fp32, "-o", f.path("q.onnx"), "--calib", f.calib, "--no-bias-correction", "--algorithm", "rtn"});
  INFO(r.err);
  REQUIRE(r.code == 0);

  // The quantized model fails the int8 bar...
  r = run_mcc({"eval", f.path("q.onnx"), "--reference", f.fp32, "--inputs", f.eval, "--per-layer", "--json",
               "--per-layer-top", "0"});
  INFO(r.err);
  CHECK(r.code == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["passed"] == false);
  const auto& pl = j["per_layer"];
  CHECK(pl["samples"] == 6);
  const auto& layers = pl["layers"];
  REQUIRE(layers.size() >= 8);  // conv1..3, relu1..3, gap, flat, Y: shared by name
  // ...ranked worst SNR first...
  for (size_t i = 1; i < layers.size(); ++i) CHECK(layers[i]["snr_db"].get<double>() >= layers[i - 1]["snr_db"].get<double>());
  CHECK(layers[0]["rank"] == 1);
  // ...and conv2 is where the error comes from: rank 1 by introduced error, though later layers
  // have a SNR as low or lower (they inherit it).
  const auto* c2 = layer_of(layers, "conv2_out");
  REQUIRE(c2 != nullptr);
  CHECK((*c2)["node"] == "conv2");
  CHECK((*c2)["op"] == "Conv");
  CHECK((*c2)["ref_node"] == "conv2");
  CHECK((*c2)["introduced_rank"] == 1);
  CHECK((*c2)["introduced_snr_db"].get<double>() < 15.0);
  CHECK((*c2)["inputs"] == nlohmann::json::array({"relu1_out"}));
  const auto* c1 = layer_of(layers, "conv1_out");
  REQUIRE(c1 != nullptr);
  CHECK((*c1)["snr_db"].get<double>() > 30.0);  // the well-behaved layer before it
  const auto* c3 = layer_of(layers, "conv3_out");
  REQUIRE(c3 != nullptr);
  CHECK((*c3)["snr_db"].get<double>() < 20.0);            // inherits conv2's error...
  CHECK((*c3)["introduced_snr_db"].get<double>() > (*c2)["introduced_snr_db"].get<double>() + 10);  // ...adds little
  CHECK(pl["exclude"] == nlohmann::json::array({"conv2"}));
  const std::string opt = pl["stage_option"];
  CHECK(opt == "quantize{exclude=conv2}");

  // The table says the same on stdout.
  r = run_mcc({"eval", f.path("q.onnx"), "--reference", f.fp32, "--inputs", f.eval, "--per-layer"});
  CHECK(r.code == 1);
  CHECK(r.out.find("where the error is introduced: conv2 ") != std::string::npos);
  CHECK(r.out.find("re-run with: quantize{exclude=conv2}") != std::string::npos);

  // Paste the suggestion into a pipeline: accuracy is back above the int8 bar.
  const std::string spec =
      "quantize{calib=" + f.calib + " bias_correction=false algorithm=rtn " + opt.substr(std::string("quantize{").size());
  r = run_mcc({"convert", f.fp32, "-o", f.path("fixed.onnx"), "-p", spec});
  INFO(r.err);
  REQUIRE(r.code == 0);
  r = run_mcc({"eval", f.path("fixed.onnx"), "--reference", f.fp32, "--inputs", f.eval, "--per-layer", "--json"});
  INFO(r.err);
  CHECK(r.code == 0);
  const auto k = nlohmann::json::parse(r.out);
  CHECK(k["passed"] == true);
  CHECK(k["outputs"][0]["min_cosine"].get<double>() >= 0.99);
  CHECK(k["outputs"][0]["min_snr_db"].get<double>() >= 15.0);
  CHECK(k["per_layer"]["exclude"].empty());
  const auto* fixed_c2 = layer_of(k["per_layer"]["layers"], "conv2_out");
  REQUIRE(fixed_c2 != nullptr);
  CHECK((*fixed_c2)["quantized"] == false);  // conv2 stayed float
  CHECK((*fixed_c2)["snr_db"].get<double>() > 30.0);
  // The same through `mcc quantize --exclude`.
  r = run_mcc({"quantize", f.fp32, "-o", f.path("fixed2.onnx"), "--calib", f.calib, "--exclude", "conv2", "--no-bias-correction"});
  REQUIRE(r.code == 0);
  CHECK(run_mcc({"eval", f.path("fixed2.onnx"), "--reference", f.fp32, "--inputs", f.eval}).code == 0);
}

TEST_CASE("per-layer: an fp16 model compares with its fp32 reference in f32, with nothing to exclude") {
  Fixture f;
  auto r = run_mcc({"convert", f.fp32, "-o", f.path("h.onnx"), "-p", "fp16"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  r = run_mcc({"eval", f.path("h.onnx"), "--reference", f.fp32, "--inputs", f.eval, "--per-layer", "--json"});
  INFO(r.err);
  CHECK(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& layers = j["per_layer"]["layers"];
  CHECK(layers.size() >= 8);
  for (const auto& l : layers) {
    CHECK(l["snr_db"].get<double>() > 30.0);
    CHECK(l["quantized"] == false);
  }
  CHECK(j["per_layer"]["skipped"].empty());
  CHECK(j["per_layer"]["exclude"].empty());
  CHECK(j["per_layer"]["stage_option"] == "");
}

TEST_CASE("per-layer: --per-layer-top limits the rows; a model against itself is exact everywhere") {
  Fixture f;
  const auto r = run_mcc({"eval", f.fp32, "--reference", f.fp32, "--inputs", f.eval, "--per-layer", "--json", "--per-layer-top", "3"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["per_layer"]["layers"].size() == 3);
  CHECK(j["per_layer"]["compared"].get<int>() >= 8);
  for (const auto& l : j["per_layer"]["layers"]) {
    CHECK(l["max_abs"].get<double>() == 0.0);
    CHECK(l["snr_db"].get<double>() == 1e308);  // +inf in JSON
  }
}

TEST_CASE("per-layer: bad requests exit 2 with one line") {
  Fixture f;
  auto r = run_mcc({"eval", f.fp32, "--inputs", f.eval, "--per-layer"});
  CHECK(r.code == 2);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("--reference") != std::string::npos);
  // Two models with nothing in common by name.
  mcc::ir::Model renamed = bad_layer_model();
  for (auto* n : renamed.graph->nodes())
    for (auto* o : n->outputs) renamed.graph->rename_value(*o, "other_" + o->name);
  mcc::ir::save_model(renamed, f.path("renamed.onnx"));
  r = run_mcc({"eval", f.path("renamed.onnx"), "--reference", f.fp32, "--inputs", f.eval, "--per-layer"});
  CHECK(r.code == 2);
  CHECK(mcc::test::one_error_line(r.err));
}
