// End-to-end `mcc quantize --method auto --mixed-target C`: the state records the measured
// sensitivities and what stays float, --state replays it byte-identically with no data, and the
// sensitivity flags are refused next to --state or together (exit 2).
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;

namespace {
std::string golden(const std::string& c) { return (mcc::test::source_dir() / "golden" / c).string(); }
}  // namespace

TEST_CASE("quantize: --method auto --mixed-target records the measured choice and replays byte-identical") {
  mcc::test::TempDir tmp("mcc-quantize-mixed");
  const std::string model = golden("mnist") + "/model.onnx";
  const std::string out = (tmp.path / "q.onnx").string();
  const auto q = run_mcc({"quantize", model, "-o", out, "--calib", golden("mnist"), "--method", "auto", "--mixed-target",
                          "0.999", "--sensitivity-samples", "2", "--threads", "2"});
  INFO(q.err);
  REQUIRE(q.code == 0);
  const auto state = nlohmann::json::parse(mcc::test::slurp(tmp.path / "q.mcc.json"));
  const auto& rec = state["stages"][1]["record"];
  REQUIRE(rec.contains("mixed"));
  CHECK(rec["mixed"]["samples"] == 2);
  CHECK(rec["mixed"]["target_cosine"] == 0.999);
  CHECK(rec["mixed"]["sensitivity"].size() >= 1);
  CHECK(rec["stats"]["activations_kept_float"] == rec["mixed"]["kept_float"].size());
  for (const auto& p : rec["points"])
    if (p["role"] == "activation") CHECK((p["method"] == "minmax" || p["method"] == "percentile" || p["method"] == "mse"));

  const std::string again = (tmp.path / "again.onnx").string();
  const auto r = run_mcc({"quantize", model, "-o", again, "--state", (tmp.path / "q.mcc.json").string()});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(mcc::test::slurp(again) == mcc::test::slurp(out));

  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"--state", (tmp.path / "q.mcc.json").string(), "--mixed-target", "0.99"},
           {"--calib", golden("mnist"), "--mixed-target", "0.99", "--keep-float-top", "1"},
           {"--calib", golden("mnist"), "--method", "best"}}) {
    std::vector<std::string> args{"quantize", model, "-o", (tmp.path / "x.onnx").string(), "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto b = run_mcc(args);
    INFO(extra[0] << " " << extra[2] << ": " << b.err);
    CHECK(b.code == 2);
    CHECK_FALSE(fs::exists(tmp.path / "x.onnx"));
  }
}
