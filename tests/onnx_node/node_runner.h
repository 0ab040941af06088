// Runs one ONNX backend test case folder (model.onnx + test_data_set_N/) on the cpu backend and
// compares every output with onnx's own tolerances (rtol 1e-3, atol 1e-7) unless overridden.
#pragma once
#include <string>

namespace mcc::test {

struct NodeCaseResult {
  bool passed = false;
  std::string reason;  // first failure, one line
};

struct NodeCaseOptions {
  double atol = 1e-7, rtol = 1e-3;
  int timeout_seconds = 60;
};

/// Runs the case in a forked child (a crash or a hang fails the case, not the suite).
NodeCaseResult run_node_case(const std::string& case_dir, const NodeCaseOptions& opts);

}  // namespace mcc::test
