// Opset requirements of the quantize stage: QDQ with one scale per tensor needs ai.onnx opset
// >= 10, per-channel >= 13, 16-bit activations (QuantizeLinear to uint16/int16) >= 21. A lower
// opset is raised when every op in the model keeps its meaning or is rewritten by the raise
// (quantize/policy.h, common/opset_upgrade.h), and the IR version with it (>= 5, 7, 10); otherwise
// the stage refuses, naming the node. Does not apply when nothing is selected or the model's
// opset already suffices.
#pragma once
#include "ir/graph.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

/// A plan with no points that keeps the model's opset and IR version.
Plan unchanged_plan(const ir::Model& model);

/// Whether any selected activation is 16-bit.
bool any_16bit(const Selection& sel);

/// Why the model's ai.onnx opset cannot be raised from `from` to `to` ("" = it can): an op whose
/// meaning changed with no rewrite (quantize/policy.h), or a node the raise's rewrite refuses
/// (common/opset_upgrade.h). Every mode's opset requirement asks this before any other work.
std::string raise_blocker(const ir::Model& model, int64_t from, int64_t to);

/// Raises plan.opset_to / plan.ir_to to what the selection needs (16-bit activations when
/// `wide`). Throws UnsupportedError when an op of the model blocks the raise.
void require_opset(const ir::Model& model, const Selection& sel, bool wide, Plan& plan);

}  // namespace mcc::transforms::quantize
