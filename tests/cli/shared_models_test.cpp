// The real models beside the project (../shared/models) run on the cpu backend and match ONNX
// Runtime on seeded inputs. ORT's outputs are made at test time by golden/ort_reference.py, so the
// test needs python3 with onnxruntime; without it, or without ../shared, it is skipped loudly.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/ort.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;

namespace {
bool have_ort() { return mcc::test::have_onnxruntime(); }
bool shared_models_missing() {
  const bool missing = !fs::is_directory(mcc::test::shared_dir() / "models") || !have_ort();
  if (missing)
    std::fprintf(stderr, "SKIPPED: shared-model checks need %s and python3 with onnxruntime\n",
                 (mcc::test::shared_dir() / "models").c_str());
  return missing;
}
}  // namespace

TEST_CASE("MobileNetV2 (BatchNormalization kept) matches ONNX Runtime on the cpu backend" * doctest::skip(shared_models_missing())) {
  const fs::path model = mcc::test::shared_dir() / "models" / "mobilenet_v2_random_bn_opset13.onnx";
  REQUIRE(fs::exists(model));
  mcc::test::TempDir tmp("mcc-shared");
  const std::string cmd = "python3 '" + (mcc::test::source_dir() / "golden" / "ort_reference.py").string() + "' '" +
                          model.string() + "' '" + tmp.path.string() + "' --seed 3";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto r = mcc::test::run_mcc({"eval", model.string(), "--golden", tmp.path.string(), "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["passed"] == true);
  CHECK(j["outputs"][0]["min_cosine"].get<double>() > 0.99999);
}
