// Facts about ai.onnx ops that several stages need, in one table (ir/op_facts.cpp, one line per
// op): how an op's output shape follows from its inputs (for ir/shape_inference), whether it
// passes channels through unchanged (for structured pruning), whether it usually carries learned
// parameters (weights), which schema changes keep its meaning when a model's opset is raised, and
// which meaning changes a raise rewrites (transforms/common/opset_upgrade.h writes them).
// Which inputs are float data is not here: it comes from the ONNX schemas (ir/op_schema.h).
//
// Does not apply to other domains (ai.onnx.ml, com.microsoft, ...): the table is keyed by ai.onnx
// op type, so callers check a node's domain first (Node::is). An op the table does not know gets
// nullptr, and callers then assume nothing about it.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace mcc::ir {

/// How the (first) output's shape and element type follow from the inputs.
enum class ShapeKind : uint8_t {
  None,           // no static rule: data-dependent, or not modelled (outputs stay unknown)
  Same,           // shape and element type of input 0
  SameBool,       // shape of input 0, bool
  Broadcast,      // multidirectional broadcast of all inputs, element type of input 0
  BroadcastBool,  // multidirectional broadcast of all inputs, bool
  Reduce,         // reduction over `axes` (attribute or input) with keepdims / noop_with_empty_axes
  Own,            // a rule of its own in ir/shape_inference
};

/// How structured pruning may follow channels through the op (data input 0 to output 0).
enum class Channels : uint8_t {
  Other,    // mixes channels, or needs handling of its own (BatchNormalization, Concat, Add)
  Through,  // output channel c depends on input channel c only, and the channel count is kept
};

struct OpFacts {
  std::string_view op;
  ShapeKind shape = ShapeKind::None;
  Channels channels = Channels::Other;
  /// Has inputs that are learned parameters in exported models (conv/matmul weights, recurrent
  /// weights, normalization scales, PRelu slopes, embedding tables).
  bool weights = false;
  /// Schema version from which raising the opset up to 13 keeps the op's meaning; 0 = unknown (a
  /// raise is then refused when the op's schema changes).
  int raise_from = 0;
  /// Opset (14..21) at which the op changed meaning after 13; 0 = its changes up to 21 keep it.
  int changed_at = 0;
  std::string_view why;  // the reason for a fact that is not obvious
};

/// Facts of an ai.onnx op type; nullptr when the table does not know it.
const OpFacts* op_facts(std::string_view op);
/// The whole table, sorted by op name.
std::span<const OpFacts> all_op_facts();

/// Shape kind of an op; ShapeKind::None for an op the table does not know.
ShapeKind shape_kind(std::string_view op);
/// True when structured pruning may follow channels straight through the op.
bool passes_channels_through(std::string_view op);
/// True for ops whose outputs are random draws, so two runs (or two identical nodes) may differ:
/// the Random* generators, Bernoulli, Multinomial, and Dropout (random in training mode).
bool draws_random_values(std::string_view op);

/// A schema change that altered an op's meaning in a way a local rewrite of the node expresses:
/// a node of schema version v, oldest <= v < at, keeps its meaning up to opset at - 1, and a raise
/// across opset `at` gives it the form of schema `at` (of op `becomes` when set).
struct RaiseRewrite {
  std::string_view op;
  int at = 0;
  int oldest = 0;
  std::string_view becomes;  // the op type after the rewrite; empty: unchanged
  std::string_view what;     // the change, in words
};

/// Every rewritten meaning change, sorted by op, then `at`.
std::span<const RaiseRewrite> all_raise_rewrites();
/// The rewritten meaning changes of one op, oldest first (empty when none).
std::span<const RaiseRewrite> raise_rewrites(std::string_view op);

/// Lowest schema version of `op` from which raising the model's opset up to 13 keeps its
/// semantics, the rewrites of raise_rewrites(op) (and of the op it becomes) included; nullopt
/// when unknown. A rewrite may still refuse a particular node (transforms/common/opset_upgrade.h).
std::optional<int> raise_compatible_from(std::string_view op);
/// Opset (14..21) at which `op` changed meaning, for ops raise_compatible_from accepts up to 13;
/// nullopt when its changes up to 21 all keep the meaning. A change listed in raise_rewrites is
/// still reported here (the Reduce ops' and Split's at 18).
std::optional<int> changed_meaning_after_13(std::string_view op);

}  // namespace mcc::ir
