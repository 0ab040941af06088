// Every op the cuda backend registers has cuda-emulated cases: its name appears as a string
// literal in a test file of tests/backends/cuda/ (where every case checks that the node was placed
// on cuda and matches the cpu). A kernel registered without tests fails here, naming the op.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "backends/cuda/op_table.h"
#include "support/paths.h"

namespace {

std::string cuda_test_sources() {
  std::string all;
  for (const auto& e : std::filesystem::directory_iterator(mcc::test::source_dir() / "tests/backends/cuda")) {
    const std::string name = e.path().filename().string();
    if (name == "kernel_coverage_test.cpp" || e.path().extension() != ".cpp") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    all += ss.str();
  }
  return all;
}

TEST_SUITE("cuda-emulated") {
  TEST_CASE("every registered cuda kernel has cuda-emulated test cases") {
    mcc::backends::cuda::OpTable table;
    mcc::backends::cuda::register_all(table);
    const std::string sources = cuda_test_sources();
    const auto ops = table.ops();
    REQUIRE(ops.size() > 50);
    for (const std::string& op : ops) {
      INFO("op " << op << " is registered by the cuda backend but no test in tests/backends/cuda names it");
      CHECK(sources.find("\"" + op + "\"") != std::string::npos);
    }
    MESSAGE(ops.size() << " cuda kernels registered, each named by a cuda-emulated test");
  }
}

}  // namespace
