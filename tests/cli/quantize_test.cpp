// End-to-end `mcc quantize`: MNIST quantized with its golden samples as calibration data passes
// `mcc eval` against ONNX Runtime's float outputs under the int8 rules; --state replays it
// byte-identically with no data; a state of another model, bad rules and missing data exit with
// the documented codes and one error line.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;

namespace {
std::string golden(const std::string& c) { return (mcc::test::source_dir() / "golden" / c).string(); }
}  // namespace

TEST_CASE("quantize: MNIST with its golden samples as calibration data passes eval; --state replays byte-identical") {
  mcc::test::TempDir tmp("mcc-quantize");
  const std::string out = (tmp.path / "mnist.int8.onnx").string();
  const auto q = run_mcc({"quantize", golden("mnist") + "/model.onnx", "-o", out, "--calib", golden("mnist"), "--method",
                          "percentile", "--threads", "2"});
  INFO(q.err);
  REQUIRE(q.code == 0);
  REQUIRE(fs::exists(tmp.path / "mnist.int8.mcc.json"));
  const auto state = nlohmann::json::parse(mcc::test::slurp(tmp.path / "mnist.int8.mcc.json"));
  // fold, quantize and its self-check (3 samples: 1 held back from calibration, judged).
  REQUIRE(state["stages"].size() == 3);
  CHECK(state["stages"][2]["pass"] == "check");
  const auto& rec = state["stages"][1]["record"];
  CHECK(rec["calibration"]["samples"] == 2);
  CHECK(rec["calibration"]["sha256"].get<std::string>().size() == 64);
  CHECK(rec["points"].size() >= 4);

  const auto e = run_mcc({"eval", out, "--golden", golden("mnist"), "--json", "--threads", "2"});
  INFO(e.err);
  CHECK(e.code == 0);
  CHECK(nlohmann::json::parse(e.out)["passed"] == true);

  // Replay from the state alone (no --calib): the same bytes.
  const std::string again = (tmp.path / "again.onnx").string();
  const auto r = run_mcc({"quantize", golden("mnist") + "/model.onnx", "-o", again, "--state",
                          (tmp.path / "mnist.int8.mcc.json").string()});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(mcc::test::slurp(again) == mcc::test::slurp(out));

  // The same state on another model: exit 3.
  const auto other = run_mcc({"quantize", golden("silero_vad") + "/model.onnx", "-o", (tmp.path / "x.onnx").string(),
                              "--state", (tmp.path / "mnist.int8.mcc.json").string()});
  CHECK(other.code == 3);
  CHECK(mcc::test::one_error_line(other.err));
  CHECK_FALSE(fs::exists(tmp.path / "x.onnx"));
}

TEST_CASE("quantize: bad rules and selections exit 2, missing data exits 3, nothing written") {
  mcc::test::TempDir tmp("mcc-quantize-bad");
  const std::string out = (tmp.path / "q.onnx").string();
  const std::string model = golden("mnist") + "/model.onnx";
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"--rule", "NoSuchLayer.*:skip"},
           {"--rule", "Convolution28"},                 // no action
           {"--rule", "Convolution28:fastest"},         // unknown action
           {"--exclude", "Convolution999"},
           {"--op-types", "LSTM"}}) {
    std::vector<std::string> args{"quantize", model, "-o", out, "--calib", golden("mnist"), "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_mcc(args);
    INFO(extra[0] << " " << extra[1] << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(mcc::test::one_error_line(r.err));
  }
  CHECK(run_mcc({"quantize", model, "-o", out}).code == 2);  // neither --calib nor --state
  const auto missing = run_mcc({"quantize", model, "-o", out, "--calib", (tmp.path / "nothing").string(), "-q"});
  CHECK(missing.code == 3);
  CHECK(mcc::test::one_error_line(missing.err));
  CHECK_FALSE(fs::exists(out));
  // 16-bit activations on an opset-8 model: every op keeps its meaning up to opset 21, so it is raised.
  const auto wide = run_mcc({"quantize", model, "-o", out, "--calib", golden("mnist"), "--rule", "Times212:uint16", "-q"});
  CHECK(wide.code == 0);
  CHECK(fs::exists(out));
}

TEST_CASE("quantize: rules apply in order and the state lists what each matched") {
  mcc::test::TempDir tmp("mcc-quantize-rules");
  const std::string out = (tmp.path / "q.onnx").string();
  const auto r = run_mcc({"quantize", golden("mnist") + "/model.onnx", "-o", out, "--calib", golden("mnist"), "--rule",
                          "Convolution28:skip", "--rule", "Convolution.*:per_tensor", "-q"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto state = nlohmann::json::parse(mcc::test::slurp(tmp.path / "q.mcc.json"));
  const auto& rules = state["stages"][1]["record"]["rules"];
  CHECK(rules[0]["matched"] == nlohmann::json({"Convolution28"}));
  CHECK(rules[1]["matched"] == nlohmann::json({"Convolution110"}));
}
