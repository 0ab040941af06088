// Helpers of the cuda-emulated tests: seeded f32/f16 inputs,
// a check that a node runs on the cuda backend and matches the cpu, and the plan-time answer.
#pragma once
#include <string>
#include <vector>

#include "support/op_test.h"

namespace mcc::test::cuda_test {

inline const backends::Backend& cuda() { return backends::find_backend("cuda"); }

/// Values uniform in [-1, 1) of dtype dt (f32 or f16), the same for the same seed.
inline ir::Tensor random_of(ir::DType dt, std::vector<int64_t> dims, unsigned seed) {
  const auto v = random_values(ir::checked_numel(dims), seed);
  if (dt == ir::DType::F16) return tensor_of<f16>(std::move(dims), std::vector<double>(v.begin(), v.end()));
  return tensor<float>(std::move(dims), v);
}

/// Runs t on the cpu and on the cuda backend: the node must be placed on cuda and its outputs
/// must match the cpu's (backend_tol).
inline void check_on_cuda(const OpTest& t, const std::string& op) {
  const auto ref = t.run_on(backends::cpu_backend());
  const auto got = t.run_on(cuda());
  CHECK(got.placed_on == "cuda");
  check_same_outputs(ref.outputs, got.outputs, "cuda", op);
}

/// The node stays on the cpu when the cuda backend is requested.
inline void check_declined(const OpTest& t) { CHECK(t.run_on(cuda()).placed_on == "cpu"); }

/// The cuda backend's answer for a node of `op` whose inputs have these dtypes (Undefined:
/// unknown at plan time) and the given attributes.
inline backends::Support support_of(const std::string& op, int opset, const std::vector<ir::DType>& dtypes,
                                    const std::vector<ir::Attribute>& attrs = {}) {
  ir::Graph g;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    ir::Value& v = g.add_value("in" + std::to_string(i));
    v.dtype = dtypes[i];
    ins.push_back(&v);
  }
  ir::Node& n = g.add_node(op, "", "node", ins, {"out"});
  n.since_version = opset;
  for (const auto& a : attrs) n.set_attr(a);
  return cuda().supports(n, dtypes);
}

}  // namespace mcc::test::cuda_test
