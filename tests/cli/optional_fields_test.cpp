// Optional fields through `mcc convert` (no pipeline, -p fold, -p fp16): runs
// tests/cli/check_optional_fields.py, which builds a model with every optional field present and
// one variant per field without it, and checks each output against the input (protobuf equality,
// the absent field staying absent, onnx.checker, ONNX Runtime outputs). Needs python3 with onnx,
// onnxruntime and numpy; without them the case says so loudly and checks nothing.
#include <doctest/doctest.h>

#include <cstdlib>
#include <regex>

#include "support/files.h"
#include "support/paths.h"

namespace {

bool have_python_onnx() {
  return std::system("python3 -c 'import onnx, onnxruntime, numpy' > /dev/null 2>&1") == 0;
}

}  // namespace

TEST_SUITE("roundtrip") {

TEST_CASE("every optional field absent in the input stays absent through mcc convert") {
  if (!have_python_onnx()) {
    MESSAGE("python3 with onnx, onnxruntime and numpy is NOT available: the optional-field round trip is NOT checked");
    WARN_MESSAGE(false, "optional-field round trip SKIPPED (scripts/setup.sh installs the python packages)");
    return;
  }
  mcc::test::TempDir work("mcc-optional-fields");
  const auto log = work.path / "log.txt";
  const std::string cmd = "python3 '" + (mcc::test::source_dir() / "tests/cli/check_optional_fields.py").string() +
                          "' --mcc '" + mcc::test::mcc_binary().string() + "' --work '" + (work.path / "m").string() +
                          "' > '" + log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string out = mcc::test::slurp(log);
  MESSAGE(out.substr(out.size() > 6000 ? out.size() - 6000 : 0));
  std::smatch counts;
  REQUIRE(std::regex_search(out, counts, std::regex(R"((\d+) passed, (\d+) failed)")));
  CHECK(std::stoi(counts[1]) >= 150);  // 50+ models, 3 modes each
  CHECK(counts[2] == "0");
  CHECK(rc == 0);
}

}  // TEST_SUITE
