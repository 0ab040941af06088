// Runs one ONNX backend test case folder (model.onnx + test_data_set_N/) on a backend and
// compares every output with onnx's own tolerances (rtol 1e-3, atol 1e-7) unless overridden.
#pragma once
#include <cstdint>
#include <string>

namespace mcc::test {

struct NodeCaseResult {
  bool passed = false;
  std::string reason;            // first failure, one line
  int64_t nodes_on_backend = 0;  // nodes placed on the requested backend (0 for cpu runs)
};

struct NodeCaseOptions {
  double atol = 1e-7, rtol = 1e-3;
  int timeout_seconds = 60;
  std::string backend = "cpu";  // requested backend (nodes it does not support run on the cpu)
};

/// Runs the case in a forked child (a crash or a hang fails the case, not the suite).
NodeCaseResult run_node_case(const std::string& case_dir, const NodeCaseOptions& opts);

}  // namespace mcc::test
