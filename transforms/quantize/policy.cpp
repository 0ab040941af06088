// Op facts for the quantize stage (see quantize/policy.h).
#include "transforms/quantize/policy.h"

#include "transforms/common/opset_upgrade.h"

#include "ir/op_attrs.h"
#include "ir/op_facts.h"
#include "ir/op_schema.h"
#include "ir/weight_layout.h"

namespace mcc::transforms::quantize {

const OpSet& default_ops() {
  static const OpSet s{"Conv", "ConvTranspose", "Gemm", "MatMul"};
  return s;
}

const OpSet& supported_ops() {
  static const OpSet s{"Add",        "AveragePool", "Concat",   "Conv",    "ConvTranspose", "Flatten",
                       "Gemm",       "GlobalAveragePool", "HardSigmoid", "HardSwish", "LeakyRelu", "MatMul",
                       "MaxPool",    "Mul",         "Reshape",  "Resize",  "Sigmoid",       "Squeeze",
                       "Sub",        "Transpose",   "Unsqueeze"};
  return s;
}

const OpSet& equal_scale_ops() {
  static const OpSet s{"Concat"};
  return s;
}

const std::map<std::string, std::string, std::less<>>& not_quantized() {
  static const auto m = [] {
    std::map<std::string, std::string, std::less<>> out;
    auto add = [&](std::initializer_list<const char*> ops, const char* why) {
      for (const char* op : ops) out.emplace(op, why);
    };
    add({"ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul"}, "already quantized");
    add({"BatchNormalization"},
        "a per-channel affine map, folded into the Conv before it by the fold stage; alone it "
        "runs in float32 (a few parameters per channel: nothing to save)");
    add({"InstanceNormalization", "LayerNormalization", "GroupNormalization", "RMSNormalization"},
        "normalizations compute a variance of the activations in float; their scales are one "
        "vector (nothing to save)");
    add({"PRelu"}, "one slope per channel: nothing to save; runs in float32");
    add({"LSTM", "GRU", "RNN"},
        "recurrent cells: QDQ around the node cannot reach the hidden state inside it; not "
        "supported");
    add({"Gather"},
        "an embedding table would need int8 data and a DequantizeLinear after the Gather; not "
        "supported");
    add({"DeformConv"}, "its offsets are sampling coordinates (int8 would move them); not supported");
    add({"CausalConvWithState"}, "its state input and output would need their own scales; not supported");
    return out;
  }();
  return m;
}

namespace {
bool is_f32_constant(const ir::Value* v) {
  return v && v->initializer && v->initializer->dtype() == ir::DType::F32;
}
}  // namespace

std::optional<NodeSlots> slots_for(const ir::Node& n) {
  if (!(n.domain.empty() || n.domain == "ai.onnx") || !supported_ops().count(n.op_type)) return std::nullopt;
  NodeSlots s;
  const std::string& op = n.op_type;
  const ir::Value* w = n.input(1);
  // Conv/ConvTranspose weights of rank >= 3, Gemm/MatMul weights of rank 2.
  const auto layout = [&]() -> std::optional<ir::WeightLayout> {
    if (!is_f32_constant(w)) return std::nullopt;
    return ir::weight_layout(n, w->initializer->dims());
  };
  if (op == "Conv" || op == "ConvTranspose") {
    s.activations = {0};
    if (const auto l = layout()) {
      s.weight = l->weight_input;
      s.weight_axis = l->out_axis;
      const ir::Value* b = n.input(2);
      if (is_f32_constant(b) && b->initializer->rank() == 1) {
        s.bias = 2;
        if (op == "ConvTranspose")  // per-group output channels: the weight's out axis
          s.bias_channel_div = static_cast<int>(w->initializer->dims()[l->out_axis]);
      }
    }
    return s;
  }
  if (op == "Gemm") {
    s.activations = {0};
    if (const auto l = layout()) {
      s.weight = l->weight_input;
      s.weight_axis = l->out_axis;
      const ir::Value* c = n.input(2);
      const ir::GemmAttrs ga(n);
      if (is_f32_constant(c) && c->initializer->rank() == 1 &&
          c->initializer->dims()[0] == l->out_channels && ga.alpha() == 1.f && ga.beta() == 1.f)
        s.bias = 2;
    } else {
      s.activations.push_back(1);
    }
    return s;
  }
  if (op == "MatMul") {
    s.activations = {0};
    if (const auto l = layout()) {
      s.weight = l->weight_input;
      s.weight_axis = l->out_axis;  // B is [K, N]: one scale per output column
    } else {
      s.activations.push_back(1);
    }
    return s;
  }
  if (op == "Add" || op == "Mul" || op == "Sub" || op == "Concat") {
    for (int i = 0; i < n.num_inputs(); ++i)
      if (n.input(i) && !n.input(i)->initializer) s.activations.push_back(i);
    return s;
  }
  // Single data input (Resize's roi/scales/sizes, Reshape's shape are not data).
  if (n.input(0) && !n.input(0)->initializer) s.activations = {0};
  return s;
}

std::string opset_raise_blocker(const ir::Graph& g, int64_t from, int64_t to) {
  std::string why;
  ir::for_each_graph(const_cast<ir::Graph&>(g), [&](ir::Graph& sg) {
    for (const ir::Node* n : sg.nodes()) {
      if (!why.empty()) return;
      if (!(n->domain.empty() || n->domain == "ai.onnx")) continue;
      const ir::OpTypeInfo* a = ir::op_type_info(n->op_type, "", from);
      const ir::OpTypeInfo* b = ir::op_type_info(n->op_type, "", to);
      if (!a || !b) {
        why = "node " + n->describe() + ": no schema of " + n->op_type + " at opset " + std::to_string(!a ? from : to);
        continue;
      }
      // The schema registry may predate `to` (libonnx 1.12 knows opset 17): the table of later
      // changes is checked against the requested opsets themselves.
      const auto later = ir::changed_meaning_after_13(n->op_type);
      const bool broken_later = later && a->since_version < *later && to >= *later && !rewritten_on_raise(n->op_type, *later);
      if (a->since_version == b->since_version && !broken_later) continue;
      const auto ok = ir::raise_compatible_from(n->op_type);
      if (!ok || a->since_version < *ok || broken_later)
        why = "node " + n->describe() + ": " + n->op_type + "-" + std::to_string(a->since_version) +
              " changed meaning by " + n->op_type + "-" +
              std::to_string(broken_later ? *later : b->since_version);
    }
  });
  return why;
}

}  // namespace mcc::transforms::quantize
