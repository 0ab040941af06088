// Applying a quantize plan to a model (see quantize/plan.h), and the plan's JSON form.
//
// Naming (every original value name stays findable, so per-layer comparison matches names):
//   activation v    v_float (the float producer's output, renamed) -> QuantizeLinear -> v_quantized
//                   -> DequantizeLinear -> v (the dequantized value keeps the name; every node that
//                   read v reads it). A graph input or output keeps its name on the float value and
//                   the dequantized copy is v_dequantized.
//   weight W        W_quantized (int8 initializer) -> DequantizeLinear -> W; the float W is removed.
//   bias B          B_quantized (int32 initializer) -> DequantizeLinear -> B.
//   parameters      <name>_scale (float32), <name>_zero_point (the quantized dtype).
//   nodes           <name>_QuantizeLinear, <name>_DequantizeLinear.
// Every new name goes through Graph::unique_name (suffix _1, _2 on a clash).
// Dynamic activations and the weights of the nodes that read them: quantize/apply_dynamic.h.
// Block-wise weights (mode=weight_only): quantize/apply_blocked.h.
// Embedding tables whose Gathers read the int8 codes (QPoint::gathered): quantize/apply_gather.h.
// Does not apply to point forms the plan can express but nothing writes (block-wise activations,
// 4-bit without blocks): apply_plan refuses them with UnsupportedError before changing the model.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "ir/errors.h"
#include "ir/tensor_streaming.h"
#include "transforms/common/base64.h"
#include "transforms/common/opset_upgrade.h"
#include "transforms/quantize/apply_blocked.h"
#include "transforms/quantize/block_quant.h"
#include "transforms/quantize/apply_dynamic.h"
#include "transforms/quantize/apply_gather.h"
#include "transforms/quantize/apply_util.h"
#include "transforms/quantize/plan.h"

namespace mcc::transforms::quantize {

const char* role_name(Role r) {
  switch (r) {
    case Role::Activation: return "activation";
    case Role::Weight: return "weight";
    case Role::Bias: return "bias";
  }
  return "?";
}

namespace {

Role parse_role(const std::string& s) {
  if (s == "activation") return Role::Activation;
  if (s == "weight") return Role::Weight;
  if (s == "bias") return Role::Bias;
  throw ModelError("unknown role '" + s + "'");
}

std::pair<int64_t, int64_t> code_range(ir::DType dt) {
  switch (dt) {
    case ir::DType::U8: return {0, 255};
    case ir::DType::I8: return {-128, 127};
    case ir::DType::U16: return {0, 65535};
    case ir::DType::I16: return {-32768, 32767};
    case ir::DType::I32: return {INT32_MIN, INT32_MAX};
    case ir::DType::U4: return {0, 15};
    case ir::DType::I4: return {-8, 7};
    default: throw ModelError("unsupported quantized dtype " + ir::dtype_name(dt));
  }
}

/// What makes a point a form apply_plan cannot write ("" when it can write it): block-wise and
/// 4-bit forms are written for weights blocked along axis 0 only, and 4-bit only block-wise
/// (quantize/apply_blocked.h).
std::string unwritable_form(const QPoint& p) {
  if (p.block_size > 0 && (p.role != Role::Weight || p.axis != 0))
    return "block-wise (block_size " + std::to_string(p.block_size) + " along axis " + std::to_string(p.axis) + ")";
  if ((p.dtype == ir::DType::I4 || p.dtype == ir::DType::U4) && p.block_size <= 0)
    return "4-bit (" + ir::dtype_name(p.dtype) + ") without blocks";
  if (!p.codes.empty() && p.block_size <= 0 && (p.role != Role::Weight || p.dtype != ir::DType::I8))
    return "recorded codes without blocks on a " + ir::dtype_name(p.dtype) + " point";
  return "";
}

}  // namespace

ir::Tensor scale_tensor(const QPoint& p) {
  if (p.axis < 0) return ir::Tensor::scalar<float>(p.scale.at(0));
  return ir::Tensor::from_vector<float>({static_cast<int64_t>(p.scale.size())}, p.scale);
}

ir::Tensor zero_point_tensor(const QPoint& p) {
  const std::vector<int64_t> dims = p.axis < 0 ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(p.zero_point.size())};
  ir::Tensor t = ir::Tensor::allocate(p.dtype, dims);
  for (size_t i = 0; i < p.zero_point.size(); ++i) {
    const int32_t z = p.zero_point[i];
    switch (p.dtype) {
      case ir::DType::U8: t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(z); break;
      case ir::DType::I8: t.mutable_data<int8_t>()[i] = static_cast<int8_t>(z); break;
      case ir::DType::U16: t.mutable_data<uint16_t>()[i] = static_cast<uint16_t>(z); break;
      case ir::DType::I16: t.mutable_data<int16_t>()[i] = static_cast<int16_t>(z); break;
      case ir::DType::I32: t.mutable_data<int32_t>()[i] = z; break;
      default: throw ModelError("unsupported quantized dtype " + ir::dtype_name(p.dtype));
    }
  }
  return t;
}

std::string unique_node_name(const ir::Graph& g, std::set<std::string>& taken, const std::string& hint) {
  if (taken.empty())
    for (const ir::Node* n : g.nodes()) taken.insert(n->name);
  std::string name = hint;
  for (int i = 1; taken.count(name); ++i) name = hint + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}

ir::Node* find_consumer(const ir::Graph& g, const std::string& label) {
  for (ir::Node* n : g.nodes())
    if (n->name == label || (n->name.empty() && !n->outputs.empty() && n->outputs[0] && n->outputs[0]->name == label))
      return n;
  return nullptr;
}

const ir::Node* first_consumer(const ir::Graph& g, const ir::Value& v) {
  for (const ir::Node* n : g.nodes())
    for (const ir::Value* in : n->inputs)
      if (in == &v) return n;
  return nullptr;
}

void check_channels(const QPoint& p, const ir::Tensor& t) {
  const size_t want = p.axis < 0 ? 1 : static_cast<size_t>(t.dims().at(static_cast<size_t>(p.axis)));
  if (p.axis >= static_cast<int>(t.rank()) || p.scale.size() != want || p.zero_point.size() != want)
    throw ModelError("tensor '" + p.tensor + "' has shape that does not fit its " + std::to_string(p.scale.size()) +
                     " recorded scales on axis " + std::to_string(p.axis));
}

ir::Tensor quantized_codes(ir::Tensor&& w, const QPoint& p) {
  ir::Tensor q = ir::Tensor::allocate(p.dtype, w.dims());
  int64_t inner = 1, channels = 1;
  if (p.axis >= 0) {
    channels = w.dims()[static_cast<size_t>(p.axis)];
    for (size_t d = static_cast<size_t>(p.axis) + 1; d < w.rank(); ++d) inner *= w.dims()[d];
  }
  int8_t* q8 = p.dtype == ir::DType::I8 ? q.mutable_data<int8_t>().data() : nullptr;
  int32_t* q32 = p.dtype == ir::DType::I8 ? nullptr : q.mutable_data<int32_t>().data();
  if (q8 && !p.codes.empty()) {  // codes chosen by GPTQ (quantize/static_gptq.h), recorded as they are
    const std::vector<int32_t> codes = unpack_codes(p.codes, ir::DType::I8, w.numel());
    for (size_t i = 0; i < codes.size(); ++i) q8[i] = static_cast<int8_t>(codes[i]);
    return q;
  }
  ir::consume_in_chunks(std::move(w), [&](const std::byte* data, int64_t begin, int64_t end) {
    const auto* src = reinterpret_cast<const float*>(data);
    for (int64_t i = begin; i < end; ++i) {
      const size_t c = p.axis < 0 ? 0 : static_cast<size_t>((i / inner) % channels);
      if (q8) {
        q8[i] = quantize_weight(src[i], p.scale[c]);
      } else {
        const int64_t b = quantize_bias_value(src[i], p.scale[c]);
        if (b < INT32_MIN || b > INT32_MAX) throw ModelError("bias '" + p.tensor + "' overflows int32 with its recorded scale");
        q32[i] = static_cast<int32_t>(b);
      }
    }
  });
  return q;
}

namespace {

/// Replaces float initializer `v` by quantized initializer + DequantizeLinear whose output takes v's name.
void quantize_constant(ir::Graph& g, std::set<std::string>& nodes, ir::Value& v, const QPoint& p) {
  const ir::Tensor& w = *v.initializer;
  if (w.dtype() != ir::DType::F32) throw ModelError("tensor '" + p.tensor + "' is " + ir::dtype_name(w.dtype()) + ", not f32");
  check_channels(p, w);
  const std::vector<int64_t> dims = w.dims();
  // Every use moves to the DequantizeLinear output below; the float tensor survives only as a
  // graph input or output (IR < 4 lists initializers among the inputs).
  const bool kept = v.is_graph_input || std::find(g.outputs.begin(), g.outputs.end(), &v) != g.outputs.end();
  ir::Tensor q = quantized_codes(kept ? ir::Tensor(w) : std::move(*v.initializer), p);  // a shared copy is not released
  const std::vector<ir::Use> uses = v.uses;
  const ir::Node* before = first_consumer(g, v);
  const std::string name = v.name;
  g.rename_value(v, g.unique_name(name + "_float"));
  ir::Value& qv = g.add_initializer(g.unique_name(name + "_quantized"), std::move(q));
  ir::Value& sv = g.add_initializer(g.unique_name(name + "_scale"), scale_tensor(p));
  ir::Value& zv = g.add_initializer(g.unique_name(name + "_zero_point"), zero_point_tensor(p));
  ir::Node& dq = g.add_node("DequantizeLinear", "", unique_node_name(g, nodes, name + "_DequantizeLinear"), {&qv, &sv, &zv},
                            {name}, before);
  if (p.axis >= 0) dq.set_attr(ir::Attribute{"axis", ir::AttrKind::Int, int64_t{p.axis}, "", "", ""});
  ir::Value& out = *dq.outputs[0];
  out.dtype = ir::DType::F32;
  out.shape = ir::Shape::of(dims);
  for (const ir::Use& u : uses) u.user->owner->set_input(*u.user, static_cast<size_t>(u.input_index), &out);
  if (v.uses.empty()) g.remove_value(v);
}

void quantize_activation(ir::Graph& g, std::set<std::string>& nodes, ir::Value& v, const QPoint& p) {
  if (p.axis < 0 && (p.scale.size() != 1 || p.zero_point.size() != 1))
    throw ModelError("activation '" + p.tensor + "' needs one scale");
  if (p.axis >= 0) {
    // Per-channel activation scales: the channel count must be the value's, when it is known.
    const size_t ax = static_cast<size_t>(p.axis);
    const bool rank_fits = !v.shape.rank_known() || ax < v.shape.rank();
    const bool count_fits = !v.shape.rank_known() || ax >= v.shape.rank() || !(*v.shape.dims)[ax].value ||
                            static_cast<size_t>(*(*v.shape.dims)[ax].value) == p.scale.size();
    if (p.scale.empty() || p.scale.size() != p.zero_point.size() || !rank_fits || !count_fits)
      throw ModelError("activation '" + p.tensor + "' does not have " + std::to_string(p.scale.size()) +
                       " channels on axis " + std::to_string(p.axis));
  }
  const bool keep_name = v.is_graph_input || !v.producer ||
                         std::find(g.outputs.begin(), g.outputs.end(), &v) != g.outputs.end();
  std::vector<ir::Use> uses;
  for (const ir::Use& u : v.uses)
    if (u.user->owner == &g) uses.push_back(u);
  const ir::Node* before = first_consumer(g, v);
  if (!before) throw ModelError("activation '" + p.tensor + "' has no consumer to quantize");
  const std::string name = v.name;
  if (!keep_name) g.rename_value(v, g.unique_name(name + "_float"));
  ir::Value& sv = g.add_initializer(g.unique_name(name + "_scale"), scale_tensor(p));
  ir::Value& zv = g.add_initializer(g.unique_name(name + "_zero_point"), zero_point_tensor(p));
  ir::Node& q = g.add_node("QuantizeLinear", "", unique_node_name(g, nodes, name + "_QuantizeLinear"), {&v, &sv, &zv},
                           {g.unique_name(name + "_quantized")}, before);
  q.outputs[0]->dtype = p.dtype;
  q.outputs[0]->shape = v.shape;
  ir::Node& dq = g.add_node("DequantizeLinear", "", unique_node_name(g, nodes, name + "_DequantizeLinear"),
                            {q.outputs[0], &sv, &zv}, {keep_name ? g.unique_name(name + "_dequantized") : name}, before);
  if (p.axis >= 0) {
    q.set_attr(ir::Attribute{"axis", ir::AttrKind::Int, int64_t{p.axis}, "", "", ""});
    dq.set_attr(ir::Attribute{"axis", ir::AttrKind::Int, int64_t{p.axis}, "", "", ""});
  }
  ir::Value& out = *dq.outputs[0];
  out.dtype = ir::DType::F32;
  out.shape = v.shape;
  for (const ir::Use& u : uses) g.set_input(*u.user, static_cast<size_t>(u.input_index), &out);
}

}  // namespace

void activation_params(double lo, double hi, ir::DType dt, bool symmetric, float& scale, int32_t& zero_point) {
  const auto [qmin, qmax] = code_range(dt);
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  if (symmetric) {
    const double a = std::max(-lo, hi);
    const bool is_signed = qmin < 0;
    const double half = is_signed ? static_cast<double>(qmax) : (qmax - qmin) / 2.0;  // 127 / 127.5
    scale = static_cast<float>(a / half);
    zero_point = is_signed ? 0 : static_cast<int32_t>((qmax + qmin + 1) / 2);
  } else {
    scale = static_cast<float>((hi - lo) / static_cast<double>(qmax - qmin));
    zero_point = 0;
  }
  if (!(scale >= 1e-30f) || !std::isfinite(scale)) {  // empty or all-zero range: any scale represents 0
    scale = 1.0f;
    zero_point = qmin < 0 ? 0 : static_cast<int32_t>(std::clamp<int64_t>(0, qmin, qmax));
    return;
  }
  if (!symmetric) {
    const double z = std::nearbyint(static_cast<double>(qmin) - lo / static_cast<double>(scale));
    zero_point = static_cast<int32_t>(std::clamp<double>(z, static_cast<double>(qmin), static_cast<double>(qmax)));
  }
}

int8_t quantize_weight(float w, float scale) {
  const float r = std::nearbyint(w / scale);
  return static_cast<int8_t>(std::clamp(r, -127.f, 127.f));
}

int64_t quantize_bias_value(float b, float scale) {
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(b / scale)));
}

void apply_plan(ir::Model& model, const Plan& plan) {
  for (const QPoint& p : plan.points)
    if (const std::string form = unwritable_form(p); !form.empty())
      throw UnsupportedError(std::string(role_name(p.role)) + " '" + p.tensor + "' is " + form +
                             ", which this mcc cannot write");
  ir::Graph& g = *model.graph;
  // The import, every node's since_version, and the nodes whose meaning changes on the way
  // (Clip-6 bounds, Softmax axes, Reduce axes, ...; common/opset_upgrade.h).
  if (plan.opset_to != plan.opset_from) upgrade_opset(model, plan.opset_from, plan.opset_to);
  if (plan.ir_to != plan.ir_from) {
    if (plan.ir_from < 4) {
      // IR < 4 lists every initializer as a graph input although it is a constant; from IR 4 on
      // such an entry is an overridable input. Keep the constants constant.
      std::vector<ir::Value*> kept;
      for (ir::Value* in : g.inputs)
        if (in->initializer) in->is_graph_input = false;
        else kept.push_back(in);
      g.inputs = kept;
    }
    model.ir_version = plan.ir_to;
  }
  std::set<std::string> nodes;
  const std::set<std::string> integer_weights = write_dynamic_points(g, plan, nodes);
  const std::set<std::string> blocked = write_blocked_points(model, plan, nodes);
  const std::set<std::string> gathered = write_gathered_points(model, plan, nodes);
  for (const QPoint& p : plan.points) {
    if (p.dynamic || (p.role == Role::Weight && (integer_weights.count(p.tensor) || blocked.count(p.tensor) ||
                                                 gathered.count(p.tensor))))
      continue;
    ir::Value* v = g.find_value(p.tensor);
    if (!v) throw ModelError("no tensor '" + p.tensor + "' in the model's main graph");
    try {
      if (p.role == Role::Activation) {
        if (v->initializer) throw ModelError("it is a constant, not an activation");
        quantize_activation(g, nodes, *v, p);
      } else {
        if (!v->initializer) throw ModelError("it is not a constant");
        if (p.role == Role::Weight && p.dtype != ir::DType::I8) throw ModelError("weights must be i8");
        if (p.role == Role::Bias && p.dtype != ir::DType::I32) throw ModelError("biases must be i32");
        quantize_constant(g, nodes, *v, p);
      }
    } catch (ModelError& e) {
      e.add_context(std::string(role_name(p.role)) + " '" + p.tensor + "'");
      throw;
    }
  }
}

// ---------------------------------------------------------------- JSON

nlohmann::ordered_json point_to_json(const QPoint& p) {
  nlohmann::ordered_json j;
  j["tensor"] = p.tensor;
  j["role"] = role_name(p.role);
  if (p.dynamic) j["dynamic"] = true;
  if (p.per_token) j["per_token"] = true;
  if (p.row_ends_on_codes) j["row_ends_on_codes"] = true;
  if (p.gathered) j["gathered"] = true;
  j["dtype"] = ir::dtype_name(p.dtype);
  if (p.dynamic) {
    j["axis"] = p.axis >= 0 ? nlohmann::ordered_json(p.axis) : nlohmann::ordered_json(nullptr);
  } else if (p.block_size > 0) {
    // Block-wise: one scale per block (hundreds of thousands on a transformer), kept compact and
    // exact as the bytes of float32 little-endian values; zero points as the packed codes of the
    // quantized dtype, omitted when all are 0.
    j["axis"] = p.axis;
    j["block_size"] = p.block_size;
    std::string bytes(p.scale.size() * sizeof(float), '\0');
    for (size_t i = 0; i < p.scale.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &p.scale[i], sizeof u);
      for (size_t b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((u >> (8 * b)) & 0xff);
    }
    j["scale_count"] = p.scale.size();
    j["scale_f32_base64"] = base64_encode(bytes);
    if (std::any_of(p.zero_point.begin(), p.zero_point.end(), [](int32_t z) { return z != 0; }))
      j["zero_point_base64"] = base64_encode(pack_codes(p.zero_point, p.dtype));
  } else if (p.axis >= 0) {
    j["axis"] = p.axis;
    nlohmann::ordered_json s = nlohmann::ordered_json::array(), z = nlohmann::ordered_json::array(),
                           r = nlohmann::ordered_json::array();
    for (size_t i = 0; i < p.scale.size(); ++i) {
      s.push_back(static_cast<double>(p.scale[i]));
      z.push_back(p.zero_point[i]);
      if (i < p.lo.size()) r.push_back({p.lo[i], p.hi[i]});
    }
    j["scale"] = s;
    j["zero_point"] = z;
    if (!r.empty()) j["range"] = r;
  } else {
    j["axis"] = nullptr;
    j["scale"] = static_cast<double>(p.scale.at(0));
    j["zero_point"] = p.zero_point.at(0);
    if (!p.lo.empty()) j["range"] = {p.lo[0], p.hi[0]};
  }
  j["method"] = p.method;
  if (!p.consumers.empty()) j["consumers"] = p.consumers;
  if (p.group >= 0) j["group"] = p.group;
  if (!p.note.empty()) j["note"] = p.note;
  if (!p.codes.empty()) j["codes"] = base64_encode(p.codes);
  return j;
}

QPoint point_from_json(const nlohmann::ordered_json& j) {
  QPoint p;
  p.tensor = j.at("tensor").get<std::string>();
  p.role = parse_role(j.at("role").get<std::string>());
  p.dtype = ir::parse_dtype(j.at("dtype").get<std::string>());
  p.dynamic = j.value("dynamic", false);
  if (p.dynamic && p.role != Role::Activation) throw ModelError("only activations can be dynamic");
  p.per_token = j.value("per_token", false);
  if (p.per_token && !p.dynamic) throw ModelError("only dynamic points can have per_token ranges");
  p.row_ends_on_codes = j.value("row_ends_on_codes", false);
  if (p.row_ends_on_codes && !p.per_token) throw ModelError("row_ends_on_codes needs a per_token point");
  p.gathered = j.value("gathered", false);
  if (p.gathered && (p.role != Role::Weight || p.dtype != ir::DType::I8))
    throw ModelError("only int8 weights (embedding tables) can be gathered");
  const auto& ax = j.at("axis");
  p.axis = ax.is_null() ? -1 : ax.get<int>();
  if (j.contains("block_size")) {
    p.block_size = j["block_size"].get<int64_t>();
    if (p.block_size <= 0 || p.axis < 0 || p.dynamic)
      throw ModelError("block_size " + std::to_string(p.block_size) + " needs a positive size, an axis and a static point");
  }
  auto read_scale = [](const nlohmann::ordered_json& s) {
    const double d = s.get<double>();
    const float f = static_cast<float>(d);
    if (static_cast<double>(f) != d || !(f > 0) || !std::isfinite(f))
      throw ModelError("scale " + s.dump() + " is not a positive float32 value");
    return f;
  };
  if (p.dynamic) {
    if (j.contains("scale") || j.contains("zero_point") || j.contains("range"))
      throw ModelError("a dynamic point records no scale, zero point or range");
  } else if (p.block_size > 0) {
    const size_t n = j.at("scale_count").get<size_t>();
    const std::string bytes = base64_decode(j.at("scale_f32_base64").get<std::string>());
    if (bytes.size() != n * sizeof(float)) throw ModelError("scale_f32_base64 does not hold scale_count float32 values");
    for (size_t i = 0; i < n; ++i) {
      uint32_t u = 0;
      for (size_t b = 0; b < 4; ++b) u |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i * 4 + b])) << (8 * b);
      float f;
      std::memcpy(&f, &u, sizeof f);
      if (!(f > 0) || !std::isfinite(f)) throw ModelError("block scale " + std::to_string(i) + " is not a positive float32 value");
      p.scale.push_back(f);
    }
    p.zero_point = j.contains("zero_point_base64")
                       ? unpack_codes(base64_decode(j["zero_point_base64"].get<std::string>()), p.dtype, static_cast<int64_t>(n))
                       : std::vector<int32_t>(n, 0);
  } else if (p.axis < 0) {
    p.scale = {read_scale(j.at("scale"))};
    p.zero_point = {j.at("zero_point").get<int32_t>()};
    if (j.contains("range")) {
      p.lo = {j["range"].at(0).get<double>()};
      p.hi = {j["range"].at(1).get<double>()};
    }
  } else {
    for (const auto& s : j.at("scale")) p.scale.push_back(read_scale(s));
    for (const auto& z : j.at("zero_point")) p.zero_point.push_back(z.get<int32_t>());
    if (p.scale.size() != p.zero_point.size()) throw ModelError("scale and zero_point lengths differ");
    if (j.contains("range"))
      for (const auto& r : j["range"]) {
        p.lo.push_back(r.at(0).get<double>());
        p.hi.push_back(r.at(1).get<double>());
      }
  }
  const auto [qmin, qmax] = code_range(p.dtype);
  for (int32_t z : p.zero_point)
    if (z < qmin || z > qmax) throw ModelError("zero point " + std::to_string(z) + " out of range for " + ir::dtype_name(p.dtype));
  p.method = j.value("method", std::string());
  if (j.contains("consumers")) p.consumers = j["consumers"].get<std::vector<std::string>>();
  p.group = j.value("group", -1);
  p.note = j.value("note", std::string());
  if (j.contains("codes")) {
    p.codes = base64_decode(j["codes"].get<std::string>());
    if (p.codes.empty() || p.role != Role::Weight || (p.block_size <= 0 && p.dtype != ir::DType::I8))
      throw ModelError("recorded codes belong to a non-empty block-wise or int8 weight");
  }
  return p;
}

}  // namespace mcc::transforms::quantize
