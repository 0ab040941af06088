// `mcc eval --labels`: top-1 accuracy of class-score outputs against labels, with the reference's
// accuracy and the drop, the --max-top1-drop / --min-top1 verdicts, the report, and the errors.
// Expected counts come from ONNX Runtime: MNIST-8 fp32 gets 496 of the 500 bundled evaluation
// digits (golden/mnist/eval) right, and all of the first 100.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/labels.h"
#include "ir/npy.h"
#include "ir/tensor.h"
#include "support/damaged_model.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;

namespace {
const std::string kMnist = (mcc::test::source_dir() / "golden" / "mnist").string();
const std::string kModel = kMnist + "/model.onnx";
const std::string kEval = kMnist + "/eval";
const std::string kLabels = kMnist + "/eval_labels.txt";
}  // namespace

TEST_CASE("eval --labels: model and reference top-1 on the bundled MNIST digits, in text and JSON") {
  auto r = run_mcc({"eval", kModel, "--reference", kModel, "--inputs", kEval, "--labels", kLabels, "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["passed"] == true);
  const auto& t = j["top1"];
  CHECK(t["labels"] == kLabels);
  REQUIRE(t["outputs"].size() == 1);
  const auto& o = t["outputs"][0];
  CHECK(o["name"] == "Plus214_Output_0");
  CHECK(o["samples"] == 500);
  CHECK(o["correct"] == 496);
  CHECK(o["top1_percent"].get<double>() == doctest::Approx(99.2));
  CHECK(o["reference_correct"] == 496);
  CHECK(o["drop_points"].get<double>() == 0.0);
  CHECK(o["passed"] == true);

  r = run_mcc({"eval", kModel, "--reference", kModel, "--inputs", kEval, "--labels", kLabels, "--max-top1-drop", "0"});
  CHECK(r.code == 0);
  CHECK(r.out.find("top-1 accuracy against " + kLabels + ", max drop 0 points:") != std::string::npos);
  CHECK(r.out.find("model  99.20 % (496/500), reference  99.20 % (496/500), drop 0.00 points  pass") != std::string::npos);
  CHECK(r.out.find("verdict: PASS") != std::string::npos);
}

TEST_CASE("eval --labels without a reference reports the accuracy; --min-top1 judges it") {
  auto r = run_mcc({"eval", kModel, "--inputs", kEval, "--labels", kLabels});
  CHECK(r.code == 0);
  CHECK(r.out.find("model  99.20 % (496/500)  pass") != std::string::npos);
  CHECK(r.out.find("reference") == std::string::npos);
  r = run_mcc({"eval", kModel, "--inputs", kEval, "--labels", kLabels, "--min-top1", "99.5", "--json"});
  CHECK(r.code == 1);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("top-1 accuracy check failed: output 'Plus214_Output_0': top-1 99.2 % < 99.5 %") != std::string::npos);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["passed"] == false);
  CHECK(j["top1"]["min_top1_percent"].get<double>() == 99.5);
  CHECK_FALSE(j["top1"]["outputs"][0].contains("reference_correct"));
}

TEST_CASE("eval --labels: --samples takes the first labels; .npy labels [N,1] read the same; --report has them") {
  mcc::test::TempDir tmp("mcc-eval-labels");
  auto r = run_mcc({"eval", kModel, "--inputs", kEval, "--labels", kLabels, "--samples", "100", "--json"});
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["top1"]["outputs"][0]["samples"] == 100);
  CHECK(j["top1"]["outputs"][0]["correct"] == 100);

  const auto labels = mcc::ir::read_labels(kLabels);
  REQUIRE(labels.size() == 500);
  std::vector<int32_t> as_i32(labels.begin(), labels.end());
  const auto npy = (tmp.path / "labels.npy").string();
  mcc::ir::save_npy(mcc::ir::Tensor::from_vector<int32_t>({500, 1}, as_i32), npy);
  const auto report = tmp.path / "report.json";
  r = run_mcc({"eval", kModel, "--inputs", kEval, "--labels", npy, "--report", report.string()});
  REQUIRE(r.code == 0);
  j = nlohmann::json::parse(mcc::test::slurp(report));
  CHECK(j["top1"]["outputs"][0]["correct"] == 496);
}

TEST_CASE("eval --labels with --golden: the golden outputs are the reference") {
  mcc::test::TempDir tmp("mcc-eval-labels");
  const auto labels = tmp.path / "labels.txt";
  mcc::test::spit(labels, "0\n0\n0\n");  // golden/mnist/digit_0..2 are x.npy[0..2], all 0s
  const auto r = run_mcc({"eval", kModel, "--golden", kMnist, "--labels", labels.string(), "--max-top1-drop", "0"});
  CHECK(r.code == 0);
  CHECK(r.out.find("model 100.00 % (3/3), golden 100.00 % (3/3), drop 0.00 points  pass") != std::string::npos);
}

TEST_CASE("eval --max-top1-drop fails a model that loses accuracy against its reference") {
  mcc::test::TempDir tmp("mcc-eval-labels");
  // The first Conv's weight scaled by 0.2: ONNX Runtime gets 479 of the 500 digits right with it.
  const auto broken = tmp.path / "broken.onnx";
  REQUIRE(!mcc::test::write_with_scaled_conv_weight(kModel, broken, "Convolution28", 0.2f).empty());
  // Loose numeric rules so that only the top-1 limit decides.
  const std::vector<std::string> base{"eval", broken.string(), "--reference", kModel, "--inputs", kEval, "--labels",
                                      kLabels, "--atol", "1e9", "--min-cosine", "0", "--min-snr", "-1000", "--json"};
  auto args = base;
  args.insert(args.end(), {"--max-top1-drop", "1"});
  auto r = run_mcc(args);
  CHECK(r.code == 1);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("top-1 accuracy check failed: output 'Plus214_Output_0': top-1 drop ") != std::string::npos);
  auto j = nlohmann::json::parse(r.out);
  const auto& o = j["top1"]["outputs"][0];
  CHECK(o["correct"] == 479);
  CHECK(o["reference_correct"] == 496);
  CHECK(o["drop_points"].get<double>() == doctest::Approx(3.4));
  CHECK(o["passed"] == false);
  CHECK(j["passed"] == false);
  args = base;
  args.insert(args.end(), {"--max-top1-drop", "100"});
  CHECK(run_mcc(args).code == 0);
}

TEST_CASE("eval --labels: bad files and counts are exit 3, misuse is exit 2, each one line") {
  mcc::test::TempDir tmp("mcc-eval-labels");
  const auto three = tmp.path / "three.txt";
  mcc::test::spit(three, "1\n2\n3\n");
  auto r = run_mcc({"eval", kModel, "--inputs", kEval, "--labels", three.string()});
  CHECK(r.code == 3);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("3 labels for 500 samples") != std::string::npos);
  const auto bad = tmp.path / "bad.txt";
  mcc::test::spit(bad, "1\nseven\n");
  r = run_mcc({"eval", kModel, "--inputs", kEval, "--labels", bad.string()});
  CHECK(r.code == 3);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("line 2: 'seven' is not an integer label") != std::string::npos);
  r = run_mcc({"eval", kModel, "--inputs", kEval, "--labels", (tmp.path / "none.txt").string()});
  CHECK(r.code == 3);

  r = run_mcc({"eval", kModel, "--inputs", kEval, "--max-top1-drop", "1"});
  CHECK(r.code == 2);
  CHECK(r.err.find("need --labels") != std::string::npos);
  r = run_mcc({"eval", kModel, "--inputs", kEval, "--labels", kLabels, "--max-top1-drop", "1"});
  CHECK(r.code == 2);
  CHECK(r.err.find("add --reference") != std::string::npos);
  r = run_mcc({"eval", kModel, "--random", "0", "--labels", kLabels});
  CHECK(r.code == 2);
  r = run_mcc({"eval", kModel, "--reference", kModel, "--inputs", kEval, "--labels", kLabels, "--max-top1-drop", "-1"});
  CHECK(r.code == 2);
  // Silero VAD's outputs are [1,1] probabilities and states: nothing to score.
  const std::string vad = (mcc::test::source_dir() / "golden" / "silero_vad").string();
  const auto two = tmp.path / "two.txt";
  mcc::test::spit(two, "0\n1\n");
  r = run_mcc({"eval", vad + "/model.onnx", "--golden", vad, "--labels", two.string()});
  CHECK(r.code == 2);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("no output holds class scores") != std::string::npos);
}
