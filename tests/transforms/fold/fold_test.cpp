// The whole `fold` stage: on MobileNetV2 from ../shared (no BatchNormalization left, outputs equal
// under mcc's cpu backend and under ONNX Runtime) and on every golden/ model (outputs checked
// against ONNX Runtime's golden outputs by `mcc eval --golden`); plus options and idempotence.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_mcc.h"
#include "transforms/fold/fold_test_util.h"

namespace fs = std::filesystem;
using namespace mcc;

namespace {
bool have_ort() { return std::system("python3 -c 'import onnxruntime, numpy' > /dev/null 2>&1") == 0; }
fs::path mobilenet() { return test::shared_dir() / "models" / "mobilenet_v2_random_bn_opset13.onnx"; }
bool mobilenet_missing() {
  const bool missing = !fs::exists(mobilenet());
  if (missing) std::fprintf(stderr, "SKIPPED: fold end-to-end test needs %s\n", mobilenet().c_str());
  return missing;
}
bool ort_missing() {
  const bool missing = mobilenet_missing() || !have_ort();
  if (missing) std::fprintf(stderr, "SKIPPED: fold vs ONNX Runtime needs ../shared and python3 with onnxruntime\n");
  return missing;
}

double min_cosine(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b) {
  double worst = 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const auto x = a[i].data<float>(), y = b[i].data<float>();
    if (x.size() != y.size()) return -1;
    double xy = 0, xx = 0, yy = 0;
    for (size_t k = 0; k < x.size(); ++k) { xy += double(x[k]) * y[k]; xx += double(x[k]) * x[k]; yy += double(y[k]) * y[k]; }
    worst = std::min(worst, (xx == 0 && yy == 0) ? 1.0 : xy / std::sqrt(xx * yy));
  }
  return worst;
}
}  // namespace

TEST_CASE("fold on MobileNetV2: no BatchNormalization left, outputs equal on the cpu backend" * doctest::skip(mobilenet_missing())) {
  ir::Model m = ir::load_model(mobilenet().string());
  const auto feeds = test::random_feeds(m, 11);
  const auto before = test::run_cpu(m, feeds);
  const int64_t bn_before = test::count_ops(m, "BatchNormalization");
  const std::string out_name = m.graph->outputs[0]->name;
  auto r = test::run_fold(m);
  CHECK(r.modified);
  CHECK(bn_before > 0);
  CHECK(test::count_ops(m, "BatchNormalization") == 0);
  CHECK(r.stats["batch_norms_folded"].get<int64_t>() == bn_before);
  CHECK(r.stats["nodes_after"].get<int64_t>() < r.stats["nodes_before"].get<int64_t>());
  CHECK(r.record["batch_norms_folded"].size() == static_cast<size_t>(bn_before));
  CHECK(m.graph->outputs[0]->name == out_name);
  CHECK_NOTHROW(ir::verify(m));
  CHECK(min_cosine(test::run_cpu(m, feeds), before) >= 0.99999);
  CHECK_FALSE(test::run_fold(m).modified);  // idempotent
}

TEST_CASE("fold on MobileNetV2 matches the original under ONNX Runtime" * doctest::skip(ort_missing())) {
  test::TempDir tmp("mcc-fold");
  const fs::path folded = tmp.path / "folded.onnx";
  const auto r = test::run_mcc({"convert", mobilenet().string(), "-o", folded.string(), "-p", "fold"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  ir::Model m = ir::load_model(folded.string());
  CHECK(test::count_ops(m, "BatchNormalization") == 0);
  const std::string cmd = "python3 '" + (test::source_dir() / "golden" / "ort_compare.py").string() + "' '" +
                          mobilenet().string() + "' '" + folded.string() + "' --min-cosine 0.99999 --seed 5";
  CHECK(std::system(cmd.c_str()) == 0);
}

TEST_CASE("fold keeps every golden model's outputs (mcc eval --golden against ONNX Runtime's)") {
  for (const char* name : {"mnist", "silero_vad", "yolox_nano"}) {
    CAPTURE(name);
    const fs::path dir = test::source_dir() / "golden" / name;
    ir::Model m = ir::load_model((dir / "model.onnx").string());
    std::vector<std::string> outs;
    for (auto* o : m.graph->outputs) outs.push_back(o->name);
    test::run_fold(m);
    CHECK_NOTHROW(ir::verify(m));
    std::vector<std::string> after;
    for (auto* o : m.graph->outputs) after.push_back(o->name);
    CHECK(after == outs);
    test::TempDir tmp("mcc-fold-golden");
    const fs::path out = tmp.path / "model.onnx";
    ir::save_model(m, out.string());
    const auto r = test::run_mcc({"eval", out.string(), "--golden", dir.string(), "--json"});
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(nlohmann::json::parse(r.out)["passed"] == true);
  }
}

TEST_CASE("fold: sub-steps can be switched off; stats list every sub-step") {
  ir::Model m = ir::load_model((test::source_dir() / "golden" / "silero_vad" / "model.onnx").string());
  const int64_t n = ir::count_nodes(*m.graph);
  auto r = test::run_fold(m, {{"constants", "false"}, {"identity", "false"}, {"shapes", "false"},
                              {"batch_norm", "false"}, {"mul_add", "false"}, {"dead_code", "false"}});
  CHECK_FALSE(r.modified);
  CHECK(ir::count_nodes(*m.graph) == n);
  for (const char* k : {"constants_folded", "identities_removed", "shapes_folded", "batch_norms_folded",
                        "mul_add_folded", "dead_nodes_removed", "nodes_before", "nodes_after"})
    CHECK(r.stats.contains(k));
  auto r2 = test::run_fold(m);
  CHECK(r2.modified);
  CHECK(ir::count_nodes(*m.graph) < n);
  CHECK_FALSE(test::run_fold(m).modified);
}

TEST_CASE("fold through the pipeline: `mcc passes` lists it and a bad option is a usage error") {
  const auto r = test::run_mcc({"passes"});
  CHECK(r.code == 0);
  CHECK(r.out.find("fold") != std::string::npos);
  CHECK(r.out.find("constant_size_limit") != std::string::npos);
  test::TempDir tmp("mcc-fold-cli");
  const auto bad = test::run_mcc({"convert", (test::source_dir() / "golden" / "mnist" / "model.onnx").string(), "-o",
                                  (tmp.path / "o.onnx").string(), "-p", "fold{constant_size_limt=5}"});
  CHECK(bad.code == 2);
  CHECK_FALSE(fs::exists(tmp.path / "o.onnx"));
}
