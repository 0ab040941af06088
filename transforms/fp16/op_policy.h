// Op policy sets shared by the stages: which ONNX ops a mixed-precision conversion converts,
// keeps in float32, keeps in float32 on an attribute value, or runs in the widest type of its
// inputs. The lists and the reason for each entry live in op_policy.cpp and nowhere else; stages
// extend or override them through their options (fp16{fp32_ops=... fp16_ops=...}).
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace mcc::transforms::fp16 {

using OpSet = std::set<std::string, std::less<>>;

/// A conditional float32 rule (MXNet AMP's CONDITIONAL_FP32_FUNCS): the op stays in float32 when
/// its attribute `attr` has one of `values` (ints and strings compared in text form).
struct ConditionalRule {
  std::string op, attr;
  std::vector<std::string> values;
  std::string why;
  /// "Op:attr:v1|v2" — the option syntax; parse() throws UsageError on anything else.
  std::string to_string() const;
  static ConditionalRule parse(std::string_view text);
  /// The matched attribute text ("coordinate_transformation_mode=tf_crop_and_resize"), or "".
  std::string match(const ir::Node& n) const;
};

/// Ops converted to the low-precision type: compute-bound ops whose accuracy is insensitive to
/// a 10/7-bit mantissa (accumulation happens in the runtime's kernels).
const OpSet& fp16_ops();
/// Ops kept in float32: exponentials and powers that overflow fp16, reductions and
/// normalizations that accumulate many terms, ops whose output order or coordinates are
/// sensitive to rounding.
const OpSet& fp32_ops();
/// Ops that run in the widest float type among their dynamic inputs (float32 if any is float32,
/// otherwise the low type); constants adopt that type offline. Covers MXNet's FP16_FP32_FUNCS
/// (single-input ops that work in either type) and WIDEST_TYPE_CASTS (multi-input ops).
const OpSet& widest_ops();
/// Default conditional float32 rules.
const std::vector<ConditionalRule>& conditional_fp32_rules();
/// Control-flow ops: the node keeps its interface types; bodies are converted on their own with
/// their formal inputs/outputs kept as declared.
const OpSet& control_flow_ops();
/// Ai.onnx ops deliberately in no list above, each with the reason (op -> why): ops without
/// float data to convert (strings, bits, sequences), generators whose output type is an
/// attribute, quantized arithmetic. The stage treats them as unlisted (float32 by default).
const std::map<std::string, std::string, std::less<>>& deliberately_unclassified();

}  // namespace mcc::transforms::fp16
