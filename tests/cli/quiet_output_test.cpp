// What the commands print on success: a default `mcc quantize` / `mcc convert` says what it wrote,
// the size before and after, the verdict with its figures and the time, in a few lines (the
// canonical pipeline and each stage's details only with -v); -q prints nothing at all on success
// for every subcommand, while errors still print and --json still answers.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_mcc.h"

using mcc::test::run_mcc;

namespace {

std::string golden(const std::string& c) { return (mcc::test::source_dir() / "golden" / c).string(); }
std::string mnist_model() { return golden("mnist") + "/model.onnx"; }

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }
bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("quiet output: a default quantize run prints at most 8 lines: what, size, verdict, time") {
  mcc::test::TempDir tmp("mcc-quiet-quantize");
  const std::string out = (tmp.path / "q.onnx").string();
  const auto r = run_mcc({"quantize", mnist_model(), "-o", out, "--calib", golden("mnist/calib")});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(lines(r.out + r.err) <= 8);
  // 20 held-back digits cannot show a top-1 agreement of 0.99: one warning line says so.
  CHECK(lines(r.err) == 1);
  CHECK(contains(r.err, "check: undecided"));
  CHECK(contains(r.out, "wrote " + out + " and " + (tmp.path / "q.mcc.json").string() + "\n"));
  CHECK(contains(r.out, "size: "));
  CHECK(contains(r.out, " -> "));
  CHECK(contains(r.out, "% of the input)"));
  CHECK(contains(r.out, "check: output 'Plus214_Output_0' top1_agreement 1 [0.838875, 1] >= 0.99 on 20 held-back sample(s): UNDECIDED"));
  CHECK(contains(r.out, "check: verdict UNDECIDED"));
  CHECK(contains(r.out, "time: "));
  // The canonical pipeline (about 1,000 characters) and the stages' details are -v's.
  CHECK_FALSE(contains(r.out + r.err, "fold{"));
  CHECK_FALSE(contains(r.out + r.err, "calibrated"));
  for (size_t b = 0, e; (e = r.out.find('\n', b)) != std::string::npos; b = e + 1) CHECK(e - b < 200);

  const auto v = run_mcc({"quantize", mnist_model(), "-o", out, "--calib", golden("mnist/calib"), "-v"});
  INFO(v.out << v.err);
  REQUIRE(v.code == 0);
  CHECK(contains(v.err, "pipeline: fold{"));
  CHECK(contains(v.err, "quantize: calibrated"));
  CHECK(contains(v.err, "sha256"));
  CHECK(contains(v.out, "check: verdict UNDECIDED"));
}

TEST_CASE("quiet output: a default convert run and a replay print the same short shape") {
  mcc::test::TempDir tmp("mcc-quiet-convert");
  const std::string out = (tmp.path / "c.onnx").string();
  const auto r = run_mcc({"convert", mnist_model(), "-o", out, "-p", "fold,fp16"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(lines(r.out + r.err) <= 8);
  CHECK(contains(r.out, "wrote " + out + " and "));
  CHECK(contains(r.out, "size: "));
  CHECK(contains(r.out, "time: "));
  CHECK_FALSE(contains(r.out + r.err, "fold{"));

  const auto q = run_mcc({"quantize", mnist_model(), "-o", (tmp.path / "q.onnx").string(), "--calib", golden("mnist/calib"),
                          "-q"});
  REQUIRE(q.code == 0);
  const auto replay = run_mcc({"quantize", mnist_model(), "-o", (tmp.path / "r.onnx").string(), "--state",
                               (tmp.path / "q.mcc.json").string()});
  INFO(replay.out << replay.err);
  REQUIRE(replay.code == 0);
  CHECK(lines(replay.out + replay.err) <= 8);
  CHECK(contains(replay.out, "replayed the recorded verdict"));
  CHECK(contains(replay.out, "check: verdict UNDECIDED"));
}

TEST_CASE("quiet output: -q prints nothing on success for every subcommand") {
  mcc::test::TempDir tmp("mcc-quiet-q");
  const std::string model = mnist_model();
  const std::string q = (tmp.path / "q.onnx").string();
  std::vector<std::vector<std::string>> commands = {
      {"inspect", model, "-q"},
      {"inspect", model, "--dump", "-q"},
      {"convert", model, "-o", (tmp.path / "c.onnx").string(), "-q"},
      {"convert", model, "-o", (tmp.path / "d.onnx").string(), "-p", "fold", "--dry-run", "-q"},
      {"quantize", model, "-o", q, "--calib", golden("mnist/calib"), "-q"},
      {"quantize", model, "-o", (tmp.path / "r.onnx").string(), "--state", (tmp.path / "q.mcc.json").string(), "-q"},
      {"eval", q, "--reference", model, "--inputs", golden("mnist/eval"), "--samples", "5", "--per-layer", "-q"},
      {"eval", model, "--golden", golden("mnist/digit_0"), "-q"},
      {"bench", model, "--runs", "1", "--warmup", "0", "-q"},
      {"passes", "-q"},
      {"-q", "passes"},
  };
#if defined(MCC_HAVE_CUDA)
  commands.push_back({"inspect", model, "--backend", "cuda", "-q"});  // placement: no device needed
#endif
  for (const auto& args : commands) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    const auto r = run_mcc(args);
    INFO(line << "\n" << r.out << r.err);
    CHECK(r.code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.empty());
  }
}

TEST_CASE("quiet output: -q still prints errors, and --json output when asked for") {
  mcc::test::TempDir tmp("mcc-quiet-err");
  const auto missing = run_mcc({"inspect", (tmp.path / "none.onnx").string(), "-q"});
  CHECK(missing.code == 3);
  CHECK(missing.out.empty());
  CHECK(mcc::test::one_error_line(missing.err));

  const auto failed = run_mcc({"quantize", mnist_model(), "-o", (tmp.path / "f.onnx").string(), "--calib",
                               golden("mnist/calib"), "--min-top1", "1.0", "--min-cosine", "0.99999999", "--no-escalate",
                               "--per-tensor", "-q"});
  INFO(failed.out << failed.err);
  CHECK(failed.code == 1);  // the budget is out of reach: one error line, nothing on stdout
  CHECK(failed.out.empty());
  CHECK(mcc::test::one_error_line(failed.err));

  const auto json = run_mcc({"passes", "--json", "-q"});
  CHECK(json.code == 0);
  CHECK(json.err.empty());
  CHECK(nlohmann::json::parse(json.out).contains("stages"));
}
