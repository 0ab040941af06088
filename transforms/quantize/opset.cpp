// Opset requirements of the quantize stage (see quantize/opset.h).
#include "transforms/quantize/opset.h"

#include <algorithm>

#include "ir/errors.h"
#include "transforms/common/opset_upgrade.h"
#include "transforms/quantize/policy.h"

namespace mcc::transforms::quantize {

Plan unchanged_plan(const ir::Model& model) {
  Plan plan;
  plan.opset_from = plan.opset_to = model.opset("");
  plan.ir_from = plan.ir_to = model.ir_version;
  return plan;
}

bool any_16bit(const Selection& sel) {
  bool wide_any = false;
  for (const auto& a : sel.activations) wide_any = wide_any || is_16bit(a.settings.activation);
  return wide_any;
}

std::string raise_blocker(const ir::Model& model, int64_t from, int64_t to) {
  if (std::string why = opset_raise_blocker(*model.graph, from, to); !why.empty()) return why;
  return raise_refusal(model, from, to);
}

void require_opset(const ir::Model& model, const Selection& sel, bool wide, Plan& plan) {
  bool per_channel_any = false;
  for (const auto& c : sel.nodes) per_channel_any = per_channel_any || (c.slots.weight >= 0 && c.settings.per_channel);
  for (const auto& a : sel.activations) per_channel_any = per_channel_any || a.per_channel;  // axis= needs 13 too
  const int64_t need = wide ? 21 : per_channel_any ? 13 : 10;
  if (sel.nodes.empty() || plan.opset_from >= need) return;
  const std::string why = raise_blocker(model, plan.opset_from, need);
  if (!why.empty()) {
    if (wide)
      throw UnsupportedError("quantize: 16-bit activations need ai.onnx opset >= 21 (QuantizeLinear to uint16/int16) "
                             "and the model imports opset " + std::to_string(plan.opset_from) +
                             ", which cannot be raised: " + why + "; use 8-bit for those layers");
    throw UnsupportedError("quantize: " + std::string(per_channel_any ? "per-channel" : "per-tensor") +
                           " QDQ needs ai.onnx opset >= " + std::to_string(need) + " and the model imports opset " +
                           std::to_string(plan.opset_from) + ", which cannot be raised: " + why +
                           (per_channel_any ? "; try per_channel=false (opset 10)" : ""));
  }
  plan.opset_to = need;
  plan.ir_to = std::max<int64_t>(model.ir_version, need >= 21 ? 10 : need >= 13 ? 7 : 5);
}

}  // namespace mcc::transforms::quantize
