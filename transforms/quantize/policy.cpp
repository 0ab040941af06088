// Op facts for the quantize stage (see quantize/policy.h).
#include "transforms/quantize/policy.h"

#include <map>

#include "ir/op_attrs.h"
#include "ir/op_schema.h"
#include "ir/weight_layout.h"

namespace mcc::transforms::quantize {

const OpSet& default_ops() {
  static const OpSet s{"Conv", "ConvTranspose", "Gemm", "MatMul"};
  return s;
}

const OpSet& supported_ops() {
  static const OpSet s{"Add", "AveragePool", "Concat", "Conv", "ConvTranspose", "Flatten", "Gemm",
                       "GlobalAveragePool", "MatMul", "MaxPool", "Mul", "Reshape", "Resize",
                       "Sub", "Transpose"};
  return s;
}

const OpSet& equal_scale_ops() {
  static const OpSet s{"Concat"};
  return s;
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

std::optional<int> compatible_from(std::string_view op) {
  // Ops whose schema changes up to opset 13 only widen types, make an input optional, allow
  // negative axes or add attributes whose defaults keep the old behaviour: raising the opset from
  // the listed version on keeps their meaning. Ops absent here (Softmax, Squeeze, Unsqueeze,
  // Split, ReduceSum, Clip < 11, Pad < 11, Upsample, ...) changed meaning and block a raise.
  static const std::map<std::string, int, std::less<>> table{
      {"Abs", 6}, {"Add", 7}, {"And", 7}, {"ArgMax", 1}, {"ArgMin", 1}, {"AveragePool", 7},
      {"BatchNormalization", 9}, {"Cast", 6}, {"Ceil", 6}, {"Clip", 11}, {"Concat", 4}, {"Constant", 1},
      {"ConstantOfShape", 9}, {"Conv", 1}, {"ConvTranspose", 1}, {"DepthToSpace", 1}, {"DequantizeLinear", 10},
      {"Div", 7}, {"Elu", 6}, {"Equal", 7}, {"Erf", 9}, {"Exp", 6}, {"Expand", 8}, {"Flatten", 1},
      {"Floor", 6}, {"Gather", 1}, {"GatherND", 11}, {"Gemm", 7}, {"GlobalAveragePool", 1},
      {"GlobalMaxPool", 1}, {"Greater", 7}, {"HardSigmoid", 6}, {"Identity", 1}, {"InstanceNormalization", 6},
      {"LRN", 1}, {"LeakyRelu", 6}, {"Less", 7}, {"Log", 6}, {"MatMul", 1}, {"Max", 8}, {"MaxPool", 8},
      {"Mean", 8}, {"Min", 8}, {"Mul", 7}, {"Neg", 6}, {"Not", 1}, {"OneHot", 9}, {"Or", 7}, {"PRelu", 7},
      {"Pad", 11}, {"Pow", 7}, {"QuantizeLinear", 10}, {"Reciprocal", 6}, {"ReduceL1", 1}, {"ReduceL2", 1},
      {"ReduceLogSumExp", 1}, {"ReduceMax", 1}, {"ReduceMean", 1}, {"ReduceMin", 1}, {"ReduceProd", 1},
      {"Relu", 6}, {"Reshape", 5}, {"Resize", 11}, {"Selu", 6}, {"Shape", 1}, {"Sigmoid", 6}, {"Sign", 9},
      {"Size", 1}, {"Slice", 10}, {"Softplus", 1}, {"Softsign", 1}, {"SpaceToDepth", 1}, {"Sqrt", 6},
      {"Sub", 7}, {"Sum", 8}, {"Tanh", 6}, {"Tile", 6}, {"TopK", 10}, {"Transpose", 1}, {"Where", 9}};
  const auto it = table.find(op);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

std::optional<int> changed_meaning_after_13(std::string_view op) {
  // Schema changes from opset 14 to 21 of the ops in compatible_from's table: all widen types
  // (bfloat16, float8, int4, uint16 QDQ), add optional inputs (Pad axes) or add attributes whose
  // defaults keep the old behaviour (Resize antialias/axes/keep_aspect_ratio_policy, Reshape
  // allowzero=0, AveragePool dilations, Shape start/end, Cast saturate, QuantizeLinear
  // block_size/output_dtype, BatchNormalization training_mode=0) -- except the Reduce ops, whose
  // 'axes' attribute became an input at opset 18: a node carrying the attribute would lose it.
  static const std::map<std::string, int, std::less<>> table{
      {"ReduceL1", 18}, {"ReduceL2", 18}, {"ReduceLogSumExp", 18}, {"ReduceMax", 18},
      {"ReduceMean", 18}, {"ReduceMin", 18}, {"ReduceProd", 18}};
  const auto it = table.find(op);
  if (it == table.end()) return std::nullopt;
  return it->second;
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
      const auto later = changed_meaning_after_13(n->op_type);
      const bool broken_later = later && a->since_version < *later && to >= *later;
      if (a->since_version == b->since_version && !broken_later) continue;
      const auto ok = compatible_from(n->op_type);
      if (!ok || a->since_version < *ok || broken_later)
        why = "node " + n->describe() + ": " + n->op_type + "-" + std::to_string(a->since_version) +
              " changed meaning by " + n->op_type + "-" +
              std::to_string(broken_later ? *later : b->since_version);
    }
  });
  return why;
}

}  // namespace mcc::transforms::quantize
