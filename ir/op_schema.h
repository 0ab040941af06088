// Type facts of ONNX ops from the ONNX schemas linked into mcc (libonnx), for stages that change
// element types: for each input/output slot of an op, its type-constraint parameter ("T") and
// which float element types the constraint allows. This is the only source of "which inputs are
// float data" (Resize `scales` is fixed to tensor(float); Conv `X`/`W`/`B` share `T`, which allows
// float16 and float). Nothing here is maintained by hand.
//
// Opset coverage: libonnx 1.12 knows ai.onnx up to opset 17. For a node whose model imports a
// newer opset, the newest schema libonnx has is used (types of existing ops only widen across
// versions), flagged by `newer_than_schemas`; callers decide whether to trust it. An op libonnx
// has no schema for at all (added after opset 17, or a custom domain) has no OpTypeInfo.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace mcc::ir {

/// One formal input or output of an op.
struct SlotTypes {
  std::string name;        // formal name ("X", "scales")
  /// Type-constraint parameter ("T", "T1"); for a slot with a literal type ("tensor(float)",
  /// "tensor(int64)") the literal, which no other slot shares.
  std::string type_param;
  bool allows_f32 = false, allows_f16 = false, allows_bf16 = false;
  bool tensor_only = true;  // every allowed type is a plain tensor (no sequence/optional)
  bool optional = false, variadic = false;
  /// True when the slot may be converted from float32 to `low` (F16 or BF16): the constraint
  /// allows both float32 and `low`.
  bool allows_float_and(DType low) const;
};

struct OpTypeInfo {
  std::string op, domain;
  int since_version = 0;            // of the schema used
  bool newer_than_schemas = false;  // the model's opset is newer than libonnx knows for the domain
  std::vector<SlotTypes> inputs, outputs;
  /// Formal slot of the i-th actual input/output (a variadic last formal repeats); nullptr past
  /// the end (the node has more inputs than the schema allows: a schema mismatch).
  const SlotTypes* input(size_t i) const;
  const SlotTypes* output(size_t i) const;
};

/// Schema facts for `op` in `domain` ("" = ai.onnx) at the model's opset `opset`; nullptr when
/// libonnx has no schema for the op. Thread-safe; results are cached and never change.
const OpTypeInfo* op_type_info(std::string_view op, std::string_view domain, int64_t opset);

/// Newest opset libonnx knows for a domain ("" = ai.onnx); 0 for an unknown domain.
int64_t max_known_opset(std::string_view domain);

/// Every op name of the ai.onnx domain libonnx knows, sorted (for option validation and
/// "did you mean" suggestions).
const std::vector<std::string>& known_onnx_op_names();

}  // namespace mcc::ir
