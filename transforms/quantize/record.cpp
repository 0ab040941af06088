// The quantize stage's census, stats and record (see quantize/record.h).
#include "transforms/quantize/record.h"

namespace mcc::transforms::quantize {

using json = nlohmann::ordered_json;

Census layer_census(const ir::Graph& g, const Selection& sel, const Points& pts) {
  Census c;
  for (const ir::Node* n : g.nodes()) c.layers_with_weights += n->op_type == "Conv" || n->op_type == "Gemm" || n->op_type == "MatMul";
  for (const auto& cand : sel.nodes) {
    if (cand.slots.weight < 0 || !pts.weight.count(cand.node->input(static_cast<size_t>(cand.slots.weight))->name)) continue;
    bool all8 = true;
    for (int a : cand.slots.activations) {
      const ir::Value* x = cand.node->input(static_cast<size_t>(a));
      const auto it = x ? pts.activation.find(x->name) : pts.activation.end();
      all8 = all8 && it != pts.activation.end() && !is_16bit(pts.points[it->second].dtype);
    }
    c.layers_all_8bit += all8;
  }
  return c;
}

json stage_stats(const Selection& sel, const Plan& plan, const Points& pts, int64_t calibration_samples,
                 const BiasCorrections& bias, const Measured& measured, const Census& census) {
  json s = json::object();
  s["nodes_quantized"] = static_cast<int64_t>(sel.nodes.size());
  s["activations"] = static_cast<int64_t>(pts.activation.size());
  s["weights"] = pts.weights;
  s["biases"] = pts.biases;
  s["shared_scale_groups"] = static_cast<int64_t>(plan.groups.size());
  s["bias_scale_guards"] = pts.guarded;
  s["nodes_skipped"] = static_cast<int64_t>(sel.skipped.size());
  s["calibration_samples"] = calibration_samples;
  s["bias_corrections"] = static_cast<int64_t>(bias.corrected.size());
  int64_t wide_acts = 0;
  for (const auto& p : plan.points) wide_acts += p.role == Role::Activation && is_16bit(p.dtype);
  s["activations_16bit"] = wide_acts;
  s["activations_kept_float"] = measured.kept_float;
  s["layers_with_weights"] = census.layers_with_weights;
  s["layers_all_8bit"] = census.layers_all_8bit;
  return s;
}

json stage_record(const RecordParts& r) {
  json rec;
  rec["format"] = 1;
  rec["opset"] = {{"from", r.plan.opset_from}, {"to", r.plan.opset_to}};
  rec["ir_version"] = {{"from", r.plan.ir_from}, {"to", r.plan.ir_to}};
  rec["calibration"] = r.calibration;
  json pts = json::array();
  for (const auto& p : r.plan.points) pts.push_back(point_to_json(p));
  rec["points"] = std::move(pts);
  rec["groups"] = r.plan.groups;
  rec["rules"] = r.matched.at("rules");
  rec["exclude"] = r.matched.at("exclude");
  rec["skipped_nodes"] = r.sel.skipped;
  json skipped_tensors = r.acts.skipped;
  skipped_tensors.insert(skipped_tensors.end(), r.points.skipped.begin(), r.points.skipped.end());
  rec["skipped_tensors"] = skipped_tensors;
  rec["bias_correction"] = {{"enabled", r.bias.enabled}, {"corrected", r.bias.corrected}, {"skipped", r.bias.skipped}};
  rec["widened"] = r.acts.widened;
  if (!r.measured.record.is_null()) rec["mixed"] = r.measured.record;
  rec["stats"] = r.stats;
  return rec;
}

}  // namespace mcc::transforms::quantize
