// Opset-raise steps for attributes that became inputs (see common/opset_rewrites.h): Clip's
// min/max at 11, Pad's pads/value at 11 (its paddings renamed pads at 2), Slice's
// starts/ends/axes and TopK's k at 10, Upsample's scales at 9, Dropout's ratio at 12, the axes of
// Squeeze/Unsqueeze/ReduceSum at 13 and of the other Reduce ops at 18, Split's split at 13 (and
// num_outputs at 18 where no split is given). The values keep their meaning; a scalar that
// takes the data's element type (Clip bounds, Pad's value) needs that type known, else the node
// is refused.
#include <algorithm>

#include "transforms/common/opset_rewrites.h"
#include "transforms/common/weight_fold.h"

namespace mcc::transforms {
namespace {

/// Refusal when a bound or fill value must become a scalar of the data's type and it is unknown.
std::string data_type_unknown(const ir::Node& n, const RaiseFacts& f) {
  if (is_float(f.types.of(n.input(0)))) return "";
  return "the element type of its input is unknown, and its attribute values become constants of that type";
}

ir::Value& data_scalar(ir::Graph& g, const ir::Node& n, const RaiseFacts& f, std::string_view what, double v) {
  return add_node_constant(g, n, what, from_f64(f.types.of(n.input(0)), {}, {v}));
}

std::string clip_refusal(const ir::Node& n, const RaiseFacts& f) {
  return n.has_attr("min") || n.has_attr("max") ? data_type_unknown(n, f) : "";
}

void clip_inputs(ir::Graph& g, ir::Node& n, const RaiseFacts& f) {
  const bool has_min = n.has_attr("min"), has_max = n.has_attr("max");
  const float lo = n.attr_float("min", 0.f), hi = n.attr_float("max", 0.f);
  drop_attrs(n, {"min", "max", "consumed_inputs"});
  if (has_min) g.set_input(n, 1, &data_scalar(g, n, f, "min", lo));
  if (has_max) g.set_input(n, 2, &data_scalar(g, n, f, "max", hi));
}

void pad_rename(ir::Graph&, ir::Node& n, const RaiseFacts&) {
  for (ir::Attribute& a : n.attrs)
    if (a.name == "paddings") a.name = "pads";
}

bool pads_a_constant_value(const ir::Node& n) {
  return n.attr_string("mode", "constant") == "constant" && n.attr_float("value", 0.f) != 0.f;
}

std::string pad_refusal(const ir::Node& n, const RaiseFacts& f) {
  if (!n.has_attr("pads") && !n.has_attr("paddings")) return "it has no pads attribute";
  return pads_a_constant_value(n) ? data_type_unknown(n, f) : "";
}

void pad_inputs(ir::Graph& g, ir::Node& n, const RaiseFacts& f) {
  pad_rename(g, n, f);
  const bool fill = pads_a_constant_value(n);
  const float value = n.attr_float("value", 0.f);
  attr_to_input(g, n, "pads", 1);
  drop_attrs(n, {"value"});
  if (fill) g.set_input(n, 2, &data_scalar(g, n, f, "constant_value", value));
}

std::string slice_refusal(const ir::Node& n, const RaiseFacts&) {
  return n.has_attr("starts") && n.has_attr("ends") ? "" : "it has no starts or ends attribute";
}

void slice_inputs(ir::Graph& g, ir::Node& n, const RaiseFacts&) {
  attr_to_input(g, n, "starts", 1);
  attr_to_input(g, n, "ends", 2);
  attr_to_input(g, n, "axes", 3);
}

std::string topk_refusal(const ir::Node& n, const RaiseFacts&) {
  return n.has_attr("k") ? "" : "it has no k attribute";
}

void topk_input(ir::Graph& g, ir::Node& n, const RaiseFacts&) {
  const int64_t k = n.attr_int("k", 0);
  drop_attrs(n, {"k"});
  g.set_input(n, 1, &add_node_constant(g, n, "K", int64_vector({k})));
}

std::string upsample_refusal(const ir::Node& n, const RaiseFacts&) {
  return n.has_attr("scales") ? "" : "it has no scales attribute";
}

void upsample_scales_input(ir::Graph& g, ir::Node& n, const RaiseFacts&) {
  const std::vector<float> scales = n.attr_floats("scales");
  drop_attrs(n, {"scales"});
  g.set_input(n, 1, &add_node_constant(g, n, "scales",
                                       ir::Tensor::from_vector<float>({static_cast<int64_t>(scales.size())}, scales)));
}

void dropout_ratio_input(ir::Graph& g, ir::Node& n, const RaiseFacts&) {
  if (!n.has_attr("ratio")) return;
  const float ratio = n.attr_float("ratio", 0.5f);
  drop_attrs(n, {"ratio"});
  g.set_input(n, 1, &add_node_constant(g, n, "ratio", ir::Tensor::scalar<float>(ratio)));
}

void axes_input(ir::Graph& g, ir::Node& n, const RaiseFacts&) { attr_to_input(g, n, "axes", 1); }

std::string unsqueeze_refusal(const ir::Node& n, const RaiseFacts&) {
  return n.has_attr("axes") ? "" : "it has no axes attribute";
}

void split_input(ir::Graph& g, ir::Node& n, const RaiseFacts&) { attr_to_input(g, n, "split", 1); }

void split_num_outputs(ir::Graph&, ir::Node& n, const RaiseFacts&) {
  if (n.input(1) || n.has_attr("num_outputs")) return;
  n.set_attr(ir::Attribute{"num_outputs", ir::AttrKind::Int, static_cast<int64_t>(n.outputs.size()), "", "", ""});
}

constexpr RaiseStep kSteps[] = {
    {"Clip", 11, clip_refusal, clip_inputs},
    {"Dropout", 12, nullptr, dropout_ratio_input},
    {"Pad", 2, nullptr, pad_rename},
    {"Pad", 11, pad_refusal, pad_inputs},
    {"ReduceL1", 18, nullptr, axes_input},
    {"ReduceL2", 18, nullptr, axes_input},
    {"ReduceLogSum", 18, nullptr, axes_input},
    {"ReduceLogSumExp", 18, nullptr, axes_input},
    {"ReduceMax", 18, nullptr, axes_input},
    {"ReduceMean", 18, nullptr, axes_input},
    {"ReduceMin", 18, nullptr, axes_input},
    {"ReduceProd", 18, nullptr, axes_input},
    {"ReduceSum", 13, nullptr, axes_input},
    {"ReduceSumSquare", 18, nullptr, axes_input},
    {"Slice", 10, slice_refusal, slice_inputs},
    {"Split", 13, nullptr, split_input},
    {"Split", 18, nullptr, split_num_outputs},
    {"Squeeze", 13, nullptr, axes_input},
    {"TopK", 10, topk_refusal, topk_input},
    {"Unsqueeze", 13, unsqueeze_refusal, axes_input},
    {"Upsample", 9, upsample_refusal, upsample_scales_input},
};

}  // namespace

std::span<const RaiseStep> input_rewrite_steps() { return kSteps; }

}  // namespace mcc::transforms
