// Internal interface of the fp16 stage (fp16/fp16.cpp): the plan (which nodes run in the low
// type and why, decided by fp16/plan.cpp) and its application (fp16/apply.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "transforms/common/node_filter.h"
#include "transforms/fp16/op_policy.h"

namespace mcc::transforms::fp16 {

/// Constants that overflow the low type: keep their consumers in float32; clamp them when they
/// are mask fills (is_mask_fill) and keep the others in float32; or clamp every one.
enum class OutOfRange { KeepFp32, ClampMasks, Saturate };
enum class Unlisted { Fp32, Widest };

/// Resolved options of the stage.
struct Config {
  ir::DType low = ir::DType::F16;
  bool keep_io = true;
  fp16::OpSet user_fp16_ops, user_fp32_ops, user_widest_ops;  // from options; win over defaults
  std::vector<fp16::ConditionalRule> conditional;
  NodeFilter exclude;  // exclude=; records the name of each node it keeps in fp32
  OutOfRange out_of_range = OutOfRange::ClampMasks;
  /// A Gather/GatherElements/GatherND reading a float32 constant with run-time indices (an
  /// embedding table) runs in the low type, the table converted offline (reason "embedding").
  bool convert_embeddings = true;
  Unlisted unlisted = Unlisted::Fp32;
  /// IR < 4 lists every initializer among the graph inputs; they are weights, not inputs.
  bool initializer_inputs_are_constants = false;
};

/// A constant (initializer or Constant-node output) that would not fit the low type.
struct RangeReport {
  std::string value;
  int64_t overflow = 0;   // finite values beyond the low type's largest finite value
  int64_t underflow = 0;  // nonzero values that become zero
  double max_abs = 0;
  int64_t overflow_negative = 0;              // of `overflow`, the values below -max
  double overflow_min = 0, overflow_max = 0;  // most negative / most positive overflowing value
  bool one_overflow_value = true;             // every overflowing value is the same number
  std::string action;     // "kept_fp32" | "clamped" (a mask fill) | "saturated" | "" (underflow only)
};

/// Smallest magnitude of a mask fill: far beyond any trained weight (fp16's largest is 65504), the
/// magnitude of the "minus infinity" fills that exporters write (-1e9, -1e30, float32's lowest).
constexpr double kMaskFillMin = 1e6;
/// True when every overflowing value of the constant is one number of magnitude >= kMaskFillMin:
/// a fill that stands for -inf (or +inf) ahead of a softmax or a max, where the low type's largest
/// finite value does the same job.
inline bool is_mask_fill(const RangeReport& r) {
  return r.overflow > 0 && r.one_overflow_value && std::max(-r.overflow_min, r.overflow_max) >= kMaskFillMin;
}

/// One clamped constant and sign: `count` values from `from` (the most extreme) to `to`.
struct Clamped {
  std::string tensor;
  int64_t count = 0;
  double from = 0, to = 0;
};

/// The decision for one node that has float32 data the low type could replace.
struct Decision {
  const ir::Node* node = nullptr;
  std::string graph;  // "" for the main graph; "<node>/<attr>" (nested with '/') for bodies
  int index = 0;      // position in its graph's node order
  bool low = false;
  std::string reason; // fp16_op | fp16_ops_option | fp32_op | fp32_ops_option | excluded | conditional
                      // | widest | unlisted | unsupported_op | schema_mismatch | control_flow | out_of_range
  std::string detail; // rule, attribute, constant name ...
};

struct Plan {
  std::vector<Decision> decisions;  // graph order, depth first
  std::unordered_map<const ir::Node*, size_t> by_node;
  /// Element type of every value before the stage (declared, or inferred by ir/shape_inference,
  /// or from the schemas where that inference knows nothing).
  std::unordered_map<const ir::Value*, ir::DType> orig;
  std::vector<RangeReport> ranges;  // in first-seen order
  std::map<std::string, int64_t> unsupported_ops;  // op -> nodes, sorted
  int64_t newer_opset_nodes = 0;    // nodes typed with an older schema than their opset

  const Decision* find(const ir::Node* n) const {
    const auto it = by_node.find(n);
    return it == by_node.end() ? nullptr : &decisions[it->second];
  }
  ir::DType orig_dtype(const ir::Value* v) const {
    const auto it = orig.find(v);
    return it == orig.end() ? ir::DType::Undefined : it->second;
  }
};

/// Recorded decisions from a state: graph path + index -> (op, node name, low, reason).
struct ReplayEntry {
  std::string op, name;
  bool low = false;
  std::string reason, detail;
};
using Replay = std::map<std::pair<std::string, int>, ReplayEntry>;

/// Schema facts for a node, or nullptr (no schema, or more inputs/outputs than it allows).
const ir::OpTypeInfo* node_types(const ir::Node& n, int64_t opset);
/// The constant tensor behind a value: an initializer that is not a graph input (or is one, when
/// `initializer_inputs` says initializers listed as inputs are weights), or the `value` of a
/// Constant node; nullptr otherwise.
const ir::Tensor* constant_tensor(const ir::Value* v, bool initializer_inputs);
/// True when slot `param` of `n` may switch from float32 to the low type: the constraint allows
/// both, at least one input carries it (output-only parameters are fixed by attributes), and every
/// slot of it whose type is known is float32.
bool group_convertible(const ir::Node& n, const ir::OpTypeInfo& t, const std::string& param,
                       const Plan& plan, ir::DType low);
/// The element type input `i` of `n` must have after the stage.
ir::DType wanted_input_dtype(const ir::Node& n, size_t i, const Plan& plan, ir::DType low, int64_t opset);

/// Decides every node (or takes the decisions from `replay` when given).
Plan make_plan(ir::Model& m, Config& cfg, const Replay* replay);

struct ApplyStats {
  int64_t casts = 0, initializers_converted = 0, initializers_copied = 0, values_saturated = 0;
  int64_t io_retyped = 0;
  std::vector<Clamped> clamped;  // in conversion order
};
/// Rewrites the model according to the plan. Returns what it did.
ApplyStats apply_plan(ir::Model& m, const Plan& plan, const Config& cfg);

/// Converts a float32 tensor to the low type; counts overflow/underflow into `r`; saturates
/// (clamps) to the largest finite value when `saturate`, otherwise overflowing values become +-inf.
ir::Tensor to_low(const ir::Tensor& t, ir::DType low, bool saturate, RangeReport* r);
/// The same, consuming `t` chunk by chunk so its memory is released as the conversion proceeds
/// (ir/tensor_streaming.h): peak memory of about the output instead of input plus output.
ir::Tensor to_low_consuming(ir::Tensor&& t, ir::DType low, bool saturate, RangeReport* r);
/// Counts overflow/underflow of converting `t` into `r`, without making the converted tensor.
void count_low_range(const ir::Tensor& t, ir::DType low, RangeReport& r);

}  // namespace mcc::transforms::fp16
