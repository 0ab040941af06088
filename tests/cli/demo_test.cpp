// scripts/demo.sh, the README's first command after setup, runs end to end with the bundled data:
// quantize MNIST (its short report), the sidecar's key lines, eval of INT8 against fp32 with labels (both top-1
// figures and a PASS verdict), and a --state replay that gives the same bytes.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "support/files.h"
#include "support/paths.h"

TEST_CASE("demo: scripts/demo.sh quantizes MNIST, evaluates it with labels and replays it byte for byte") {
  mcc::test::TempDir tmp("mcc-demo");
  const auto log = tmp.path / "demo.log";
  const std::string cmd = "MCC='" + mcc::test::mcc_binary().string() + "' MCC_DEMO_OUT='" + (tmp.path / "out").string() +
                          "' bash '" + (mcc::test::source_dir() / "scripts" / "demo.sh").string() + "' > '" +
                          log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = mcc::test::slurp(log);
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find("% of the input)") != std::string::npos);
  CHECK(out.find("check: verdict PASS") != std::string::npos);
  CHECK(out.find("calib:    golden/mnist/calib") != std::string::npos);
  CHECK(out.find("top-1 accuracy against golden/mnist/eval_labels.txt, max drop 0.2 points:") != std::string::npos);
  CHECK(out.find("reference  99.20 % (496/500)") != std::string::npos);  // fp32, as ONNX Runtime scores it
  CHECK(out.find("verdict: PASS") != std::string::npos);
  CHECK(out.find("replay: byte-identical") != std::string::npos);
}
