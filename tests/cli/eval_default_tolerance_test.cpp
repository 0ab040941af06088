// The fp32 default verdict of `mcc eval` (judge/verdict.h): allclose with
// atol = 1e-4 * max(1, max|reference|) per output and sample, rtol 1e-3, cosine >= 0.9999.
// Shown on the real models of golden/ against ONNX Runtime's outputs: the unmodified models pass
// by default, and a copy with one Conv weight scaled by 1.01 fails, although its cosine stays
// above 0.9999 (so the allclose rule, not the cosine rule, is what catches it). A user's --atol
// stays absolute. With ../shared present, the same holds on 20 real COCO photos (ONNX Runtime's
// outputs made at test time by tests/cli/ort_outputs.py).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "backends/compare.h"
#include "judge/verdict.h"
#include "ir/npy.h"
#include "ir/tensor.h"
#include "support/damaged_model.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::ir::Tensor;
using mcc::test::run_mcc;

namespace {

fs::path golden(const std::string& c) { return mcc::test::source_dir() / "golden" / c; }

// Elements outside allclose under the fp32 default rules.
int64_t not_close_by_default(const std::vector<float>& got, const std::vector<float>& want) {
  const auto rules = mcc::judge::default_rules("fp32");
  const auto n = static_cast<int64_t>(want.size());
  return mcc::backends::compare_tensors(Tensor::from_vector<float>({n}, got), Tensor::from_vector<float>({n}, want),
                                        mcc::judge::tolerance_for(rules, "y"))
      .not_close;
}

// The three real models of golden/ and, for each, a Conv on the path its samples take.
struct RealCase {
  const char* folder;
  const char* conv;
};
constexpr RealCase kRealCases[] = {
    {"mnist", "Convolution28"},  // the first Conv
    {"yolox_nano", "Conv_41"},   // the stem Conv
    {"silero_vad", "Conv_137"},  // first_layer depthwise Conv of the 16 kHz branch (inside If)
};

bool coco_missing() {
  const bool missing = !fs::is_directory(mcc::test::shared_dir() / "data" / "coco") ||
                       std::system("python3 -c 'import onnxruntime, numpy, PIL' > /dev/null 2>&1") != 0;
  if (missing)
    std::fprintf(stderr, "SKIPPED: the COCO check needs %s and python3 with onnxruntime, numpy and PIL\n",
                 (mcc::test::shared_dir() / "data" / "coco").c_str());
  return missing;
}

}  // namespace

TEST_CASE("eval rules: the fp32 default atol scales with the largest reference magnitude, and says so") {
  const auto r = mcc::judge::default_rules("fp32");
  CHECK(r.atol_scaled);
  CHECK(mcc::judge::describe_rules(r) ==
        "fp32: allclose(atol=0.0001*max(1,max|ref|), rtol=0.001), cosine >= 0.9999; integer outputs exact");
  // An output reaching 416 with an error of 4.9e-4 where the reference is 0: atol 0.0416.
  CHECK(not_close_by_default({416.0f, 4.9e-4f}, {416.0f, 0.0f}) == 0);
  CHECK(not_close_by_default({416.0f, 0.05f}, {416.0f, 0.0f}) == 1);
  // Below magnitude 1 the absolute tolerance stays 1e-4.
  CHECK(not_close_by_default({0.5f, 2e-4f}, {0.5f, 0.0f}) == 1);
  CHECK(not_close_by_default({0.5f, 0.9e-4f}, {0.5f, 0.0f}) == 0);
  // NaN and Inf do not set the scale (they are compared by position).
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(not_close_by_default({inf, nan, 2.0f, 1.5e-4f}, {inf, nan, 2.0f, 0.0f}) == 0);
  CHECK(not_close_by_default({inf, nan, 2.0f, 2.5e-4f}, {inf, nan, 2.0f, 0.0f}) == 1);
  const auto m = mcc::backends::compare_tensors(Tensor::from_vector<float>({2}, {416.0f, 0.0f}),
                                                Tensor::from_vector<float>({2}, {-416.0f, 0.0f}),
                                                mcc::judge::tolerance_for(r, "y"));
  CHECK(m.atol_used == doctest::Approx(0.0416));
}

TEST_CASE("eval rules: a given --atol is absolute, globally or per output; --rtol alone keeps the scaled atol") {
  auto r = mcc::judge::default_rules("fp32");
  mcc::judge::apply_tolerance_flag(r, "--rtol", "1e-2");
  CHECK(r.atol_scaled);
  CHECK(mcc::judge::tolerance_for(r, "y").atol_scales_with_ref);
  mcc::judge::apply_tolerance_flag(r, "--atol", "y:1e-3");
  CHECK_FALSE(mcc::judge::tolerance_for(r, "y").atol_scales_with_ref);
  CHECK(mcc::judge::tolerance_for(r, "y").atol == 1e-3);
  CHECK(mcc::judge::tolerance_for(r, "z").atol_scales_with_ref);
  mcc::judge::apply_tolerance_flag(r, "--atol", "1e-4");
  CHECK_FALSE(r.atol_scaled);
  CHECK_FALSE(mcc::judge::tolerance_for(r, "z").atol_scales_with_ref);
  CHECK(mcc::judge::describe_rules(r).find("allclose(atol=0.0001, rtol=0.01)") != std::string::npos);
  // The looser profiles have no allclose by default.
  CHECK_FALSE(mcc::judge::default_rules("int8").atol_scaled);
  CHECK_FALSE(mcc::judge::default_rules("fp16").atol);
}

TEST_CASE("eval: each real model of golden/ passes the default fp32 rule against ONNX Runtime's outputs") {
  for (const auto& c : kRealCases) {
    INFO(c.folder);
    REQUIRE(fs::exists(golden(c.folder) / "model.onnx"));
    const auto r = run_mcc({"eval", (golden(c.folder) / "model.onnx").string(), "--golden", golden(c.folder).string(), "--json"});
    INFO(r.err);
    CHECK(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["rules"].get<std::string>().find("atol=0.0001*max(1,max|ref|)") != std::string::npos);
    for (const auto& o : j["outputs"]) CHECK(o["atol"].get<double>() >= 1e-4);
  }
  // The absolute tolerance used is reported: YOLOX-nano's output reaches 3.2862 in ORT's output.
  const auto want = mcc::ir::load_npy((golden("yolox_nano") / "synthetic_0" / "output_0.npy").string());
  double max_ref = 0;
  for (float v : want.data<float>()) max_ref = std::max(max_ref, std::abs(static_cast<double>(v)));
  const auto r = run_mcc({"eval", (golden("yolox_nano") / "model.onnx").string(), "--golden", golden("yolox_nano").string()});
  CHECK(r.code == 0);
  char used[32];
  std::snprintf(used, sizeof used, "%.3g", 1e-4 * max_ref);
  CHECK(r.out.find(std::string("allclose atol applied (largest per output): output ") + used) != std::string::npos);
}

TEST_CASE("eval: one Conv weight scaled by 1.01 fails the default rule on each real model, cosine notwithstanding") {
  mcc::test::TempDir tmp("mcc-eval-damaged");
  for (const auto& c : kRealCases) {
    INFO(c.folder << ", " << c.conv);
    const auto damaged = tmp.path / (std::string(c.folder) + ".onnx");
    REQUIRE(!mcc::test::write_with_scaled_conv_weight(golden(c.folder) / "model.onnx", damaged, c.conv, 1.01f).empty());
    const auto r = run_mcc({"eval", damaged.string(), "--golden", golden(c.folder).string(), "--json"});
    INFO(r.err);
    CHECK(r.code == 1);
    CHECK(mcc::test::one_error_line(r.err));
    CHECK(r.err.find("elements outside allclose") != std::string::npos);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == false);
    double min_cosine = 1;
    for (const auto& o : j["outputs"]) min_cosine = std::min(min_cosine, o["min_cosine"].get<double>());
    CHECK(min_cosine > 0.9999);  // the cosine rule alone would have passed it
  }
}

TEST_CASE("eval: YOLOX-nano passes the default rule against ONNX Runtime on 20 COCO photos; a 1.01 Conv weight fails" *
          doctest::skip(coco_missing())) {
  mcc::test::TempDir tmp("mcc-eval-coco");
  const auto data = tmp.path / "coco";
  const auto model = golden("yolox_nano") / "model.onnx";
  const std::string make = "python3 '" + (mcc::test::shared_dir() / "tools" / "coco_to_yolox_samples.py").string() +
                           "' '" + data.string() + "' 20 > /dev/null && python3 '" +
                           (mcc::test::source_dir() / "tests" / "cli" / "ort_outputs.py").string() + "' '" +
                           model.string() + "' '" + data.string() + "' > /dev/null";
  REQUIRE(std::system(make.c_str()) == 0);
  {
    const auto r = run_mcc({"eval", model.string(), "--golden", data.string(), "--json"});
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(nlohmann::json::parse(r.out)["samples"] == 20);
  }
  // What a fixed absolute tolerance would say (measured, not asserted: it depends on ORT's kernels).
  auto r = run_mcc({"eval", model.string(), "--golden", data.string(), "--atol", "1e-4", "--rtol", "1e-3", "--json"});
  MESSAGE("fixed atol=1e-4, rtol=1e-3: failed on " << nlohmann::json::parse(r.out)["outputs"][0]["failed"].get<int>()
                                                  << " of 20 photos");
  const auto damaged = tmp.path / "damaged.onnx";
  REQUIRE(!mcc::test::write_with_scaled_conv_weight(model, damaged, "Conv_41", 1.01f).empty());
  r = run_mcc({"eval", damaged.string(), "--golden", data.string(), "--json"});
  CHECK(r.code == 1);
  CHECK(nlohmann::json::parse(r.out)["outputs"][0]["failed"] == 20);
}
