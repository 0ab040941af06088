// Opset-raise steps for ops whose behaviour, outputs or name changed (see common/opset_rewrites.h):
//   Softmax/LogSoftmax/Hardmax at 13: before, the input is coerced to 2-D at `axis` and the op
//     runs over all the axes from `axis` on; from 13 it runs along `axis` alone. Rewritten (axis
//     set explicitly) when those axes hold at most one dim other than 1: always when `axis` is the
//     last axis, which needs the input's rank only; otherwise refused with the reason.
//   Upsample at 10 becomes Resize-10 (same inputs and modes; "bilinear" is spelled "linear").
//   Resize at 11: Resize-10 maps coordinates asymmetrically and rounds nearest down when
//     upsampling, up when downsampling; the node gets coordinate_transformation_mode=asymmetric,
//     nearest_mode floor or ceil from its constant scales (refused when they are not constant or
//     go both ways), and an roi input (an empty constant below 13, omitted from 13).
//   Scatter at 11 becomes ScatterElements (the same op under its new name).
//   BatchNormalization at 7 (is_test, consumed_inputs dropped) and 9 (spatial dropped): refused
//     in training mode (is_test=0, training outputs) and for spatial=0 on inputs of rank > 2.
//   Dropout at 7 (is_test dropped; refused for is_test=0) and 10 (mask becomes bool: refused
//     when the mask is read, else the unread mask value is typed bool).
//   The legacy broadcast of the binary ops (Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal,
//     Greater, Less) and Gemm at 7: broadcast/axis attributes dropped; refused when `axis` aligns
//     B other than with A's trailing axes (numpy broadcasting aligns those).
#include <algorithm>
#include <optional>
#include <string>

#include "transforms/common/opset_rewrites.h"

namespace mcc::transforms {
namespace {

std::string training_mode_refusal(const ir::Node& n) {
  if (n.attr_int("is_test", 0) != 1) return "is_test is not 1: training mode, which inference runtimes do not run";
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k]) return "it has training outputs";
  return "";
}

std::string batch_norm_test_refusal(const ir::Node& n, const RaiseFacts&) { return training_mode_refusal(n); }

void drop_is_test(ir::Graph&, ir::Node& n, const RaiseFacts&) { drop_attrs(n, {"is_test", "consumed_inputs"}); }

std::string batch_norm_spatial_refusal(const ir::Node& n, const RaiseFacts& f) {
  if (n.attr_int("spatial", 1) != 0) return "";
  const auto r = f.ranks.of(n.input(0));
  if (r && *r <= 2) return "";  // no axes past the channels: per element is per channel
  return "spatial=0 normalizes each element with its own statistics, which BatchNormalization-9 cannot express";
}

void drop_spatial(ir::Graph&, ir::Node& n, const RaiseFacts&) { drop_attrs(n, {"spatial"}); }

std::string dropout_test_refusal(const ir::Node& n, const RaiseFacts&) {
  return n.attr_int("is_test", 0) == 1 ? "" : "is_test is not 1: training mode (random drops)";
}

bool is_read(const ir::Graph& g, const ir::Value* v) {
  return v && (!v->uses.empty() || std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end());
}

std::string dropout_mask_refusal(const ir::Node& n, const RaiseFacts&) {
  return is_read(*n.owner, n.outputs.size() > 1 ? n.outputs[1] : nullptr)
             ? "its mask output is read, and the mask becomes bool at opset 10"
             : "";
}

void dropout_mask_bool(ir::Graph&, ir::Node& n, const RaiseFacts&) {
  if (n.outputs.size() > 1 && n.outputs[1]) n.outputs[1]->dtype = ir::DType::Bool;
}

/// The single axis a Softmax/LogSoftmax/Hardmax-1/11 node runs over from opset 13, or why none.
std::optional<int64_t> single_axis(const ir::Node& n, const RaiseFacts& f, std::string& why) {
  const int64_t axis = n.attr_int("axis", 1);
  const auto rank = f.ranks.of(n.input(0));
  if (!rank) {
    why = "the rank of its input is unknown, so whether axis " + std::to_string(axis) +
          " is the last one (the only case opset 13 keeps for every shape) cannot be told";
    return std::nullopt;
  }
  const int64_t a = axis < 0 ? axis + *rank : axis;
  if (a < 0 || a >= *rank) {
    why = "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(*rank);
    return std::nullopt;
  }
  if (a == *rank - 1) return a;
  // Coerced to 2-D at a: one normalization over the axes a..rank-1 together.
  std::optional<int64_t> wide;
  const auto dims = f.shapes.of(n.input(0)).dims;
  bool single = dims.has_value();
  for (int64_t d = a; single && d < *rank; ++d)
    if ((*dims)[static_cast<size_t>(d)] != 1) {
      single = !wide;
      wide = d;
    }
  if (single) return wide.value_or(a);
  why = "it normalizes over axes " + std::to_string(a) + ".." + std::to_string(*rank - 1) +
        " together (2-D coercion), which opset 13 runs along one axis only";
  return std::nullopt;
}

std::string single_axis_refusal(const ir::Node& n, const RaiseFacts& f) {
  std::string why;
  return single_axis(n, f, why) ? "" : why;
}

void set_single_axis(ir::Graph&, ir::Node& n, const RaiseFacts& f) {
  std::string why;
  const auto a = single_axis(n, f, why);
  n.set_attr(ir::Attribute{"axis", ir::AttrKind::Int, a.value_or(-1), "", "", ""});
}

std::string upsample_mode_refusal(const ir::Node& n, const RaiseFacts&) {
  const std::string mode = n.attr_string("mode", "nearest");
  return mode == "nearest" || mode == "linear" || mode == "bilinear" ? "" : "mode '" + mode + "' has no Resize form";
}

void upsample_to_resize(ir::Graph&, ir::Node& n, const RaiseFacts&) {
  n.op_type = "Resize";
  if (n.attr_string("mode", "nearest") == "bilinear")
    n.set_attr(ir::Attribute{"mode", ir::AttrKind::String, std::string("linear"), "", "", ""});
}

/// Resize-10's rounding of nearest as a nearest_mode ("floor" when every scale is >= 1, "ceil"
/// when every scale is <= 1), or why it has none. Upsample-7's scales attribute counts too.
std::string nearest_mode(const ir::Node& n, std::string& why) {
  std::vector<double> scales;
  if (n.has_attr("scales")) {
    for (float s : n.attr_floats("scales")) scales.push_back(s);
  } else if (const ir::Tensor* t = constant_tensor(n.input(1)); t && t->dtype() == ir::DType::F32) {
    for (float s : t->data<float>()) scales.push_back(s);
  } else {
    why = "its scales are not constant, and nearest rounding differs for upsampling (floor) and downsampling (ceil)";
    return "";
  }
  const bool up = std::all_of(scales.begin(), scales.end(), [](double s) { return s >= 1; });
  const bool down = std::all_of(scales.begin(), scales.end(), [](double s) { return s <= 1; });
  if (up) return "floor";
  if (down) return "ceil";
  why = "its scales upsample some axes and downsample others, which round nearest differently";
  return "";
}

std::string resize10_refusal(const ir::Node& n, const RaiseFacts&) {
  std::string why;
  if (n.attr_string("mode", "nearest") == "nearest") nearest_mode(n, why);
  return why;
}

void resize10_to_11(ir::Graph& g, ir::Node& n, const RaiseFacts& f) {
  auto set_string = [&](const char* name, std::string v) {
    n.set_attr(ir::Attribute{name, ir::AttrKind::String, std::move(v), "", "", ""});
  };
  set_string("coordinate_transformation_mode", "asymmetric");
  if (n.attr_string("mode", "nearest") == "nearest") {
    std::string why;
    set_string("nearest_mode", nearest_mode(n, why));
  }
  ir::Value* scales = n.input(1);
  g.set_input(n, 2, scales);
  // roi is a required input of Resize-11 and 12 (read only by tf_crop_and_resize), optional from 13.
  g.set_input(n, 1, f.to >= 13 ? nullptr : &add_node_constant(g, n, "roi", ir::Tensor::allocate(ir::DType::F32, {0})));
}

void scatter_to_elements(ir::Graph&, ir::Node& n, const RaiseFacts&) { n.op_type = "ScatterElements"; }

std::string legacy_broadcast_refusal(const ir::Node& n, const RaiseFacts& f) {
  if (n.attr_int("broadcast", 0) == 0 || !n.has_attr("axis")) return "";
  const auto ra = f.ranks.of(n.input(0)), rb = f.ranks.of(n.input(1));
  const int64_t axis = n.attr_int("axis", 0);
  if (ra && rb && axis == *ra - *rb) return "";
  return "its legacy broadcast aligns B at axis " + std::to_string(axis) +
         (ra && rb ? "" : " (ranks unknown)") + ", not at A's trailing axes as numpy broadcasting does";
}

void drop_legacy_broadcast(ir::Graph&, ir::Node& n, const RaiseFacts&) {
  drop_attrs(n, {"broadcast", "axis", "consumed_inputs"});
}

void drop_gemm_broadcast(ir::Graph&, ir::Node& n, const RaiseFacts&) { drop_attrs(n, {"broadcast"}); }

constexpr RaiseStep kSteps[] = {
    {"Add", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"And", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"BatchNormalization", 7, batch_norm_test_refusal, drop_is_test},
    {"BatchNormalization", 9, batch_norm_spatial_refusal, drop_spatial},
    {"Div", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"Dropout", 7, dropout_test_refusal, drop_is_test},
    {"Dropout", 10, dropout_mask_refusal, dropout_mask_bool},
    {"Equal", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"Gemm", 7, nullptr, drop_gemm_broadcast},
    {"Greater", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"Hardmax", 13, single_axis_refusal, set_single_axis},
    {"Less", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"LogSoftmax", 13, single_axis_refusal, set_single_axis},
    {"Mul", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"Or", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"Pow", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"Resize", 11, resize10_refusal, resize10_to_11},
    {"Scatter", 11, nullptr, scatter_to_elements},
    {"Softmax", 13, single_axis_refusal, set_single_axis},
    {"Sub", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
    {"Upsample", 10, upsample_mode_refusal, upsample_to_resize},
    {"Xor", 7, legacy_broadcast_refusal, drop_legacy_broadcast},
};

}  // namespace

std::span<const RaiseStep> op_rewrite_steps() { return kSteps; }

}  // namespace mcc::transforms
