// `mcc quantize` checks itself: the verdict line, the sidecar's checks, held-back samples never
// used for calibration, a budget that is not met (exit 1, no model, the figures in a report, the
// configurations tried), --eval with labels, the check stage in `mcc convert`, and bad budgets.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;
using nlohmann::json;

namespace {

std::string golden(const std::string& c) { return (mcc::test::source_dir() / "golden" / c).string(); }
std::string mnist_model() { return golden("mnist") + "/model.onnx"; }

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("quantize: a default run judges itself on held-back samples, says when they cannot decide, replays without data") {
  mcc::test::TempDir tmp("mcc-quantize-check");
  const std::string out = (tmp.path / "q.onnx").string();
  const auto q = run_mcc({"quantize", mnist_model(), "-o", out, "--calib", golden("mnist/calib"), "--threads", "2"});
  INFO(q.out << q.err);
  REQUIRE(q.code == 0);
  // 20 of 20 agreeing cannot show an agreement of 0.99 (Wilson 95 % interval [0.839, 1]): the
  // model is written and the verdict says so instead of passing.
  CHECK(contains(q.out, "check: output 'Plus214_Output_0' top1_agreement 1 [0.838875, 1] >= 0.99 on 20 held-back "
                        "sample(s): UNDECIDED"));
  CHECK(contains(q.out, "check: verdict UNDECIDED"));
  CHECK(contains(q.err, "too few held-back samples to tell"));

  const json state = json::parse(mcc::test::slurp(tmp.path / "q.mcc.json"));
  // 100 samples: the last 20 are held back from calibration and judged.
  CHECK(state["stages"][1]["options"]["holdout"] == 20);
  CHECK(state["stages"][1]["record"]["calibration"]["samples"] == 80);
  REQUIRE(state["stages"][2]["pass"] == "check");
  CHECK(state["stages"][2]["record"]["data"]["holdout"] == 20);
  REQUIRE(state["checks"].size() == 1);
  const json& c = state["checks"][0];
  CHECK(c["metric"] == "top1_agreement");
  CHECK(c["value"] == 1.0);
  CHECK(c["threshold"] == 0.99);
  CHECK(c["verdict"] == "undecided");
  CHECK(c["interval"] == json::array({0.838875, 1.0}));
  CHECK(c["samples"] == 20);
  CHECK_FALSE(state.contains("escalation"));

  const std::string again = (tmp.path / "again.onnx").string();
  const auto r = run_mcc({"quantize", mnist_model(), "-o", again, "--state", (tmp.path / "q.mcc.json").string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(mcc::test::slurp(again) == mcc::test::slurp(out));
  CHECK(contains(r.out, "replayed the recorded verdict"));
  const json replayed = json::parse(mcc::test::slurp(tmp.path / "again.mcc.json"));
  CHECK(replayed["checks"] == state["checks"]);
  CHECK(replayed["stages"] == state["stages"]);  // the check stage's record and stats as recorded
}

TEST_CASE("quantize: an unreachable budget exits 1, writes no model and reports every configuration tried") {
  mcc::test::TempDir tmp("mcc-quantize-budget");
  const std::string out = (tmp.path / "q.onnx").string();
  const auto q = run_mcc({"quantize", mnist_model(), "-o", out, "--calib", golden("mnist/calib"), "--min-cosine",
                          "0.999999", "--sensitivity-samples", "2", "--threads", "2"});
  INFO(q.out << q.err);
  CHECK(q.code == 1);
  CHECK(mcc::test::one_error_line(q.err.substr(q.err.rfind("mcc: error: ") == std::string::npos ? 0 : q.err.rfind("mcc: error: "))));
  CHECK(contains(q.err, "cosine_mean"));
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(fs::exists(tmp.path / "q.mcc.json"));
  CHECK(contains(q.out, "FAIL"));
  REQUIRE(fs::exists(tmp.path / "q.check.json"));
  const json rep = json::parse(mcc::test::slurp(tmp.path / "q.check.json"));
  CHECK(rep["passed"] == false);
  // The ladder: the given configuration, method=mse, method=percentile, method=auto, then keeping
  // activations float up to a measured cosine of min(0.9999, budget + 0.005).
  REQUIRE(rep["escalation"].size() == 4);
  CHECK(contains(rep["escalation"][0]["pipeline"].get<std::string>(), "method=minmax"));
  CHECK(contains(rep["escalation"][1]["pipeline"].get<std::string>(), "method=mse"));
  CHECK(contains(rep["escalation"][2]["pipeline"].get<std::string>(), "method=percentile"));
  CHECK(contains(rep["escalation"][3]["pipeline"].get<std::string>(), "method=auto"));
  CHECK(contains(rep["pipeline"].get<std::string>(), "mixed_target=0.9999"));
  bool failed_cosine = false;
  for (const auto& c : rep["checks"])
    failed_cosine = failed_cosine || (c["metric"] == "cosine_mean" && c["verdict"] == "fail" && c["threshold"] == 0.999999);
  CHECK(failed_cosine);

  // --no-escalate: one configuration, the report where --report says.
  const auto n = run_mcc({"quantize", mnist_model(), "-o", out, "--calib", golden("mnist/calib"), "--min-cosine",
                          "0.999999", "--no-escalate", "--report", (tmp.path / "r.json").string()});
  CHECK(n.code == 1);
  CHECK_FALSE(fs::exists(out));
  const json r2 = json::parse(mcc::test::slurp(tmp.path / "r.json"));
  CHECK_FALSE(r2.contains("escalation"));
  CHECK(r2["passed"] == false);
}

TEST_CASE("quantize: --eval with labels judges top-1 accuracy on other samples") {
  mcc::test::TempDir tmp("mcc-quantize-eval");
  const std::string out = (tmp.path / "q.onnx").string();
  const auto q = run_mcc({"quantize", mnist_model(), "-o", out, "--calib", golden("mnist/calib"), "--eval",
                          golden("mnist/eval"), "--labels", golden("mnist/eval_labels.txt"), "--max-top1-drop", "1",
                          "--report", (tmp.path / "r.json").string()});
  INFO(q.out << q.err);
  REQUIRE(q.code == 0);
  const json state = json::parse(mcc::test::slurp(tmp.path / "q.mcc.json"));
  CHECK(state["stages"][1]["options"]["holdout"] == 0);
  CHECK(state["stages"][1]["record"]["calibration"]["samples"] == 100);
  bool drop = false;
  for (const auto& c : state["checks"])
    if (c["metric"] == "top1_drop_points") {
      drop = true;
      CHECK(c["samples"] == 500);
      CHECK(c["reference_top1"].get<double>() > 95.0);
      CHECK(c["value"].get<double>() <= 1.0);
      CHECK(c["verdict"] == "pass");
    }
  CHECK(drop);
  CHECK(contains(q.out, "top1_drop_points"));
  const json rep = json::parse(mcc::test::slurp(tmp.path / "r.json"));
  CHECK(rep["passed"] == true);
  CHECK(rep["checks"] == state["checks"]);
}

TEST_CASE("convert: a check stage in a pipeline fails the run below its budget") {
  mcc::test::TempDir tmp("mcc-convert-check");
  const std::string out = (tmp.path / "c.onnx").string();
  const std::string spec = "fold,quantize{calib=" + golden("mnist/calib") + " holdout=10},check{data=" +
                           golden("mnist/calib") + " holdout=10 class_min_cosine=0.9999999}";
  const auto c = run_mcc({"convert", mnist_model(), "-o", out, "-p", spec});
  INFO(c.out << c.err);
  CHECK(c.code == 1);
  CHECK_FALSE(fs::exists(out));
  CHECK(fs::exists(tmp.path / "c.check.json"));
  CHECK(contains(c.err, "in stage 'check'"));

  // An fp16 pipeline checks itself the same way: fp16 keeps MNIST's top-1 and its cosine.
  const std::string fp16_spec = "fp16,check{data=" + golden("mnist/eval") + " min_top1=1 class_min_cosine=0.9999}";
  const auto h = run_mcc({"convert", mnist_model(), "-o", (tmp.path / "h.onnx").string(), "-p", fp16_spec});
  INFO(h.out << h.err);
  CHECK(h.code == 0);
  CHECK(contains(h.out, "check: output 'Plus214_Output_0' top1_agreement 1 [1, 1] >= 1 on 500 sample(s): PASS"));

  // 5 samples settle "every sample agrees" (min_top1=1) but not an agreement of 0.99.
  const std::string ok_spec = "fold,check{data=" + golden("mnist/calib") + " samples=5 min_top1=1}";
  const auto f = run_mcc({"convert", mnist_model(), "-o", out, "-p", ok_spec});
  INFO(f.out << f.err);
  CHECK(f.code == 0);
  CHECK(contains(f.out, "check: verdict PASS"));
  const auto u = run_mcc({"convert", mnist_model(), "-o", out, "-p", "fold,check{data=" + golden("mnist/calib") + " samples=5}"});
  INFO(u.out << u.err);
  CHECK(u.code == 0);
  CHECK(contains(u.out, "check: verdict UNDECIDED"));
}

TEST_CASE("quantize: budget flags that contradict themselves or the data are refused") {
  mcc::test::TempDir tmp("mcc-quantize-badbudget");
  const std::string out = (tmp.path / "q.onnx").string();
  const std::string calib = golden("mnist/calib");
  struct Case {
    std::vector<std::string> extra;
    int code;
  };
  const std::vector<Case> cases = {
      {{"--max-top1-drop", "1"}, 2},                                    // needs --labels
      {{"--no-check", "--min-cosine", "0.9"}, 2},                       // contradicts
      {{"--eval", golden("mnist/eval"), "--holdout", "3"}, 2},          // holdout is for calibration samples
      {{"--holdout", "100"}, 2},                                        // leaves no calibration sample
      {{"--eval", golden("mnist/eval"), "--labels", golden("mnist/calib/digit_00000/Input3.npy")}, 3},  // not labels
      {{"--labels", golden("mnist/eval_labels.txt")}, 3},               // 500 labels, 100 samples
  };
  for (const auto& k : cases) {
    std::vector<std::string> args{"quantize", mnist_model(), "-o", out, "--calib", calib, "-q"};
    args.insert(args.end(), k.extra.begin(), k.extra.end());
    const auto r = run_mcc(args);
    INFO(k.extra[0] << ": " << r.err);
    CHECK(r.code == k.code);
    CHECK(mcc::test::one_error_line(r.err));
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("quantize: a state whose check record was edited is refused (exit 3)") {
  mcc::test::TempDir tmp("mcc-quantize-check-state");
  const std::string out = (tmp.path / "q.onnx").string();
  REQUIRE(run_mcc({"quantize", mnist_model(), "-o", out, "--calib", golden("mnist/calib")}).code == 0);
  const json state = json::parse(mcc::test::slurp(tmp.path / "q.mcc.json"));
  for (int k = 0; k < 3; ++k) {
    json edited = state;
    json& rec = edited["stages"][2]["record"];
    if (k == 0) rec["checks"] = "all fine";
    if (k == 1) rec["checks"][0]["value"] = "high";
    if (k == 2) rec.erase("verdict");
    const auto path = tmp.path / ("edited" + std::to_string(k) + ".mcc.json");
    mcc::test::spit(path, edited.dump(2));
    const auto r = run_mcc({"quantize", mnist_model(), "-o", (tmp.path / "r.onnx").string(), "--state", path.string(), "-q"});
    INFO(k << ": " << r.err);
    CHECK(r.code == 3);
    CHECK(mcc::test::one_error_line(r.err));
    CHECK_FALSE(fs::exists(tmp.path / "r.onnx"));
  }
}
