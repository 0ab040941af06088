// mcc eval --metric row-cosine: the cosine rule judges the mean of the rows' cosines (one embedding
// per row); the report gives rows, mean and min; unknown metrics and outputs are usage errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support/run_mcc.h"

using mcc::test::run_mcc;

namespace {
std::string golden(const std::string& c) { return (mcc::test::source_dir() / "golden" / c).string(); }
}  // namespace

TEST_CASE("eval --metric row-cosine reports and judges the mean row cosine") {
  const std::string model = golden("mnist") + "/model.onnx";
  const auto r = run_mcc({"eval", model, "--reference", model, "--inputs", golden("mnist/calib"), "--samples", "5",
                          "--metric", "row-cosine", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& o = j["outputs"][0];
  CHECK(o["rows"] == 5);  // [1, 10] scores: one row per sample
  CHECK(o["row_cosine_mean"].get<double>() == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(o["row_cosine_min"].get<double>() == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(j["rules"].get<std::string>().find("mean over rows") != std::string::npos);

  const auto t = run_mcc({"eval", model, "--reference", model, "--inputs", golden("mnist/calib"), "--samples", "2",
                          "--metric", "Plus214_Output_0:row-cosine"});
  CHECK(t.code == 0);
  CHECK(t.out.find("row cosine over 2 rows: mean 1.000000, min 1.000000") != std::string::npos);

  for (const char* bad : {"cosine-rows", "nothere:row-cosine"}) {
    const auto b = run_mcc({"eval", model, "--reference", model, "--inputs", golden("mnist/calib"), "--metric", bad});
    INFO(bad << ": " << b.err);
    CHECK(b.code == 2);
    CHECK(mcc::test::one_error_line(b.err));
  }
}
