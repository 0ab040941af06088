// Building ONNX protos directly in tests (for what the IR cannot express: absent or malformed
// fields, files written exactly as a test needs them).
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace mcc::test {

/// A ModelProto with `ir_version`, one default-domain opset import at `opset` and an empty graph
/// named `graph`; the caller adds inputs, nodes and outputs through mutable_graph().
inline onnx::ModelProto proto_model(int64_t ir_version, int64_t opset, const std::string& graph) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name(graph);
  return m;
}

}  // namespace mcc::test
