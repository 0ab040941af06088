// Calibration reuse within one process (the escalation ladder's attempts): the same model,
// samples and tensors give the kept statistics back, equal to a fresh pass; anything that changes
// the model, the tensors or the samples calibrates again; reuse off keeps nothing.
#include <doctest/doctest.h>

#include "quantize_test_util.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/calibration_cache.h"

using namespace mcc;
using namespace mcc::test;
using transforms::quantize::CalibMethod;
using transforms::quantize::CalibrationConfig;
using transforms::quantize::CalibrationResult;
using transforms::quantize::RangeSpec;

namespace {

ir::Model relu_mlp(float w) {
  return parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2, 4] X) => (float[2, 4] Y) <float[4, 4] W = {)" +
                         std::to_string(w) + R"(, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}> {
      H = MatMul(X, W)
      Y = Relu(H)
    })");
}

CalibrationConfig config(const std::string& dir, bool histograms) {
  CalibrationConfig c;
  c.data_dir = dir;
  c.histograms = histograms;
  c.threads = 1;
  return c;
}

}  // namespace

TEST_CASE("calibration reuse: the ladder's later attempts get the first pass's statistics, equal to a fresh pass") {
  const CalibDir data({2, 4}, 5, 11);
  const ir::Model m = relu_mlp(2.f);
  const std::vector<std::string> watch = {"X", "H", "Y"};
  // Without reuse: a minmax pass (no histograms) and an mse pass (histograms).
  const CalibrationResult plain_minmax = transforms::quantize::calibrate(m, watch, config(data.path(), false));
  const CalibrationResult plain_mse = transforms::quantize::calibrate(m, watch, config(data.path(), true));
  REQUIRE_FALSE(plain_minmax.stats.at("H").has_histogram());
  {
    const transforms::quantize::CalibrationReuse reuse(true);
    // The first attempt (minmax) collects histograms too, and keeps its result.
    const CalibrationResult first = transforms::quantize::calibrate(m, watch, config(data.path(), false));
    CHECK(first.stats.at("H").has_histogram());
    CHECK(first.stats.at("H") == plain_mse.stats.at("H"));
    for (const auto& name : watch) {
      const auto a = transforms::quantize::compute_range(first.stats.at(name), RangeSpec{});
      const auto b = transforms::quantize::compute_range(plain_minmax.stats.at(name), RangeSpec{});
      CHECK(a == b);
    }
    // A later attempt (mse) on the same model, samples and tensors: the kept statistics.
    const std::string key = transforms::quantize::calibration_key(m, watch, config(data.path(), true), first.sha256);
    REQUIRE(transforms::quantize::kept_calibration(key).has_value());
    const CalibrationResult again = transforms::quantize::calibrate(m, watch, config(data.path(), true));
    for (const auto& name : watch) CHECK(again.stats.at(name) == plain_mse.stats.at(name));
    const RangeSpec mse{CalibMethod::Mse, 99.99, false, 8};
    CHECK(transforms::quantize::compute_range(again.stats.at("H"), mse) ==
          transforms::quantize::compute_range(plain_mse.stats.at("H"), mse));
    CHECK(again.sha256 == plain_mse.sha256);
    CHECK(again.samples == 5);

    // Another model (a different weight), other tensors or other samples: other keys.
    const ir::Model other = relu_mlp(3.f);
    CHECK(transforms::quantize::calibration_key(other, watch, config(data.path(), true), first.sha256) != key);
    CHECK(transforms::quantize::calibration_key(m, {"X", "H"}, config(data.path(), true), first.sha256) != key);
    const CalibDir more({2, 4}, 6, 11);
    const CalibrationResult on_more = transforms::quantize::calibrate(m, watch, config(more.path(), false));
    CHECK(on_more.samples == 6);
    CHECK(on_more.sha256 != first.sha256);
    const CalibrationResult on_other = transforms::quantize::calibrate(other, watch, config(data.path(), false));
    CHECK(on_other.stats.at("H").max() > plain_mse.stats.at("H").max());  // computed on the other model
  }
  // Reuse off again: nothing is kept.
  CHECK_FALSE(transforms::quantize::calibration_reuse());
  CHECK_FALSE(transforms::quantize::kept_calibration(
                  transforms::quantize::calibration_key(m, watch, config(data.path(), true), plain_mse.sha256))
                  .has_value());
}
