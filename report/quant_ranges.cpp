// Quantization ranges read back from a QDQ model (see quant_ranges.h).
#include "report/quant_ranges.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/dtype.h"

namespace mcc::report {
namespace {

bool is_q(const ir::Node& n) { return n.is("QuantizeLinear") || n.is("QuantizeLinear", "com.microsoft"); }
bool is_dq(const ir::Node& n) { return n.is("DequantizeLinear") || n.is("DequantizeLinear", "com.microsoft"); }

std::string node_label(const ir::Node& n) {
  if (!n.name.empty() || n.outputs.empty() || !n.outputs[0]) return n.name;
  return n.outputs[0]->name;
}

/// The tensor behind a value that is an initializer or a Constant node's output.
const ir::Tensor* constant_of(const ir::Value* v) {
  if (!v) return nullptr;
  if (v->initializer) return &*v->initializer;
  if (v->producer && v->producer->is("Constant")) return v->producer->attr_tensor("value");
  return nullptr;
}

/// A constant weight, looking through a Reshape of constants (exporters reshape MatMul weights
/// at run time: mnist's Times212 reads Reshape(Parameter193, shape)).
std::optional<ir::Tensor> constant_weight(const ir::Value* v) {
  if (const ir::Tensor* t = constant_of(v)) return *t;
  const ir::Node* r = v ? v->producer : nullptr;
  if (!r || !r->is("Reshape")) return std::nullopt;
  const ir::Tensor* data = constant_of(r->input(0));
  const ir::Tensor* shape = constant_of(r->input(1));
  if (!data || !shape || shape->dtype() != ir::DType::I64 || !data->buffer()) return std::nullopt;
  std::vector<int64_t> dims(shape->data<int64_t>().begin(), shape->data<int64_t>().end());
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !r->attr_int("allowzero", 0)) {
      if (i >= data->rank()) return std::nullopt;
      dims[i] = data->dims()[i];
    }
    if (dims[i] == -1) infer = static_cast<int64_t>(i);
    else known *= dims[i];
  }
  if (infer >= 0) {
    if (known <= 0 || data->numel() % known) return std::nullopt;
    dims[static_cast<size_t>(infer)] = data->numel() / known;
  }
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n != data->numel()) return std::nullopt;
  return ir::Tensor::from_buffer(data->dtype(), dims, data->buffer());
}

double element(const ir::Tensor& t, size_t i) {
  double out = 0;
  ir::dispatch<MCC_NUMERIC_DTYPES>(t.dtype(), "quantization parameter", [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = static_cast<double>(t.data<T>()[i]);
  });
  return out;
}

std::string type_name(ir::DType dt) {
  switch (dt) {
    case ir::DType::U8: return "uint8";
    case ir::DType::I8: return "int8";
    case ir::DType::U16: return "uint16";
    case ir::DType::I16: return "int16";
    default: return ir::dtype_name(dt);
  }
}

/// Integer range of a quantized type; false for types not drawn.
bool int_range(ir::DType dt, double& qmin, double& qmax) {
  switch (dt) {
    case ir::DType::U8: qmin = 0, qmax = 255; return true;
    case ir::DType::I8: qmin = -128, qmax = 127; return true;
    case ir::DType::U16: qmin = 0, qmax = 65535; return true;
    case ir::DType::I16: qmin = -32768, qmax = 32767; return true;
    default: return false;
  }
}

/// The quantized type of a Q node: its zero point's dtype, else its output_dtype attribute, else
/// its output's declared dtype, else uint8 (ONNX's default without a zero point).
ir::DType quantized_type(const ir::Node& q) {
  if (const ir::Tensor* zp = constant_of(q.input(2))) return zp->dtype();
  if (q.has_attr("output_dtype") && q.attr_int("output_dtype", 0) != 0) return static_cast<ir::DType>(q.attr_int("output_dtype", 0));
  if (!q.outputs.empty() && q.outputs[0] && q.outputs[0]->dtype != ir::DType::Undefined) return q.outputs[0]->dtype;
  return ir::DType::U8;
}

const ir::Node* find_node(const ir::Graph& g, const std::string& label) {
  for (const ir::Node* n : g.nodes())
    if (node_label(*n) == label) return n;
  return nullptr;
}

bool is_float(ir::DType dt) { return dt == ir::DType::F32 || dt == ir::DType::F16 || dt == ir::DType::BF16 || dt == ir::DType::F64; }

/// Output-channel axis of the weight (input 1) of a node, or -1 when the op has none mcc draws.
int64_t channel_axis(const ir::Node& n, size_t rank) {
  if (n.is("Conv")) return 0;
  if (n.is("ConvTranspose")) return rank > 1 ? 1 : 0;
  if (n.is("Gemm")) return n.attr_int("transB", 0) ? 0 : (rank > 1 ? 1 : 0);
  if (n.is("MatMul")) return rank >= 2 ? static_cast<int64_t>(rank) - 1 : -2;  // -2: a vector, one channel
  return -1;
}

/// True when the dequantized weight's per-channel extremes are further from the reference's than
/// rounding allows (half a step; a step of slack): an earlier stage transformed the weight.
bool differs_from_reference(const ir::Tensor& qw, const ir::Tensor* scale, const ir::Tensor* zp, bool per_tensor,
                            size_t channels, const HtmlWeightRanges& w) {
  size_t inner = 1;
  for (size_t d = static_cast<size_t>(w.axis) + 1; d < qw.rank(); ++d) inner *= static_cast<size_t>(qw.dims()[d]);
  const size_t n = static_cast<size_t>(qw.numel());
  if (w.ch_min.size() != channels || n % (inner * channels) != 0) return false;
  std::vector<double> lo(channels, std::numeric_limits<double>::infinity()), hi(channels, -lo[0]);
  std::vector<double> s(channels), z(channels);
  for (size_t c = 0; c < channels; ++c) {
    const size_t k = per_tensor ? 0 : c;
    s[c] = element(*scale, k);
    z[c] = zp && static_cast<size_t>(zp->numel()) > k ? element(*zp, k) : 0.0;
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t c = (i / inner) % channels;
    const double v = (element(qw, i) - z[c]) * s[c];
    lo[c] = std::min(lo[c], v), hi[c] = std::max(hi[c], v);
  }
  for (size_t c = 0; c < channels; ++c) {
    const double tol = std::abs(s[c]) * 1.01;
    if (std::abs(lo[c] - w.ch_min[c]) > tol || std::abs(hi[c] - w.ch_max[c]) > tol) return true;
  }
  return false;
}

/// Fills w.q_lo/q_hi from the DequantizeLinear feeding the evaluated node's weight: of a constant
/// quantized weight, or of a QuantizeLinear that quantizes the weight at run time.
void weight_quant(const ir::Model& model, const judge::LayerStat& layer, size_t weight_input, size_t weight_rank, size_t channels,
                  HtmlWeightRanges& w) {
  const ir::Node* n = find_node(*model.graph, layer.node);
  const ir::Value* x = n ? n->input(weight_input) : nullptr;
  const ir::Node* dq = x ? x->producer : nullptr;
  if (!dq || !is_dq(*dq) || !dq->input(0)) {
    w.quant_note = "not quantized";
    return;
  }
  const ir::Value* qv = dq->input(0);
  const ir::Tensor* qw = constant_of(qv);
  const ir::Tensor* scale = constant_of(dq->input(1));
  const ir::Tensor* zp = constant_of(dq->input(2));
  ir::DType qt = qw ? qw->dtype() : zp ? zp->dtype() : qv->dtype;
  if (!qw && !zp && qv->producer && is_q(*qv->producer)) qt = quantized_type(*qv->producer);
  double qmin = 0, qmax = 0;
  if (!scale || !int_range(qt, qmin, qmax)) {
    w.quant_note = "quantized to " + type_name(qt) + (scale ? "" : " with a computed scale") + " (range not drawn)";
    return;
  }
  const size_t ns = static_cast<size_t>(scale->numel());
  int64_t axis = dq->attr_int("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(weight_rank);
  const bool per_tensor = ns == 1;
  if (!per_tensor && (ns != channels || axis != w.axis)) {
    w.quant_note = "quantized per axis " + std::to_string(axis) + " with " + std::to_string(ns) +
                   " scales, not per output channel (range not drawn)";
    return;
  }
  const bool symmetric_int8 = qt == ir::DType::I8;
  bool all_zero_zp = true;
  for (size_t c = 0; c < channels; ++c) {
    const size_t k = per_tensor ? 0 : c;
    const double s = element(*scale, k), z = zp && static_cast<size_t>(zp->numel()) > k ? element(*zp, k) : 0.0;
    all_zero_zp = all_zero_zp && z == 0;
    if (symmetric_int8 && z == 0) {
      w.q_lo.push_back(-127 * s), w.q_hi.push_back(127 * s);
    } else {
      w.q_lo.push_back((qmin - z) * s), w.q_hi.push_back((qmax - z) * s);
    }
  }
  w.quant_note = std::string(per_tensor ? "per-tensor " : "per-channel ") + type_name(qt) +
                 (per_tensor ? "" : " (axis " + std::to_string(axis) + ")") +
                 (symmetric_int8 && all_zero_zp ? ": marks at ±127 × scale" : ": marks at (qmin - zero point) × scale and (qmax - zero point) × scale") +
                 " (DequantizeLinear " + node_label(*dq) + ")";
  if (qw && differs_from_reference(*qw, scale, zp, per_tensor, channels, w))
    w.quant_note += "; the evaluated model's dequantized weight differs from the reference's by more than rounding "
                    "(clipped, or changed by an earlier stage such as folding a BatchNormalization or Mul into it)";
}

}  // namespace

std::optional<HtmlQuantRange> activation_quant_range(const ir::Model& model, const std::string& value, std::string& note) {
  const ir::Graph& g = *model.graph;
  const ir::Value* v = g.find_value(value);
  note = "not quantized";
  if (!v) return std::nullopt;
  const ir::Node* q = nullptr;
  if (v->producer && is_dq(*v->producer)) {
    const ir::Value* x = v->producer->input(0);
    if (x && x->producer && is_q(*x->producer)) q = x->producer;
  }
  for (const auto& u : v->uses)
    if (!q && u.user->owner == &g && is_q(*u.user)) q = u.user;
  if (!q) return std::nullopt;
  const ir::Tensor* scale = constant_of(q->input(1));
  const ir::DType type = quantized_type(*q);
  HtmlQuantRange r;
  r.node = node_label(*q);
  r.type = type_name(type);
  double qmin = 0, qmax = 0;
  if (!scale) {
    note = "QuantizeLinear " + r.node + " has a computed scale (range not drawn)";
    return std::nullopt;
  }
  if (scale->numel() != 1) {
    note = "QuantizeLinear " + r.node + " quantizes per axis (" + std::to_string(scale->numel()) + " scales; range not drawn)";
    return std::nullopt;
  }
  if (!int_range(type, qmin, qmax)) {
    note = "QuantizeLinear " + r.node + " quantizes to " + r.type + " (range not drawn)";
    return std::nullopt;
  }
  const ir::Tensor* zp = constant_of(q->input(2));
  r.scale = element(*scale, 0);
  r.zero_point = zp && zp->numel() >= 1 ? element(*zp, 0) : 0.0;
  r.lo = (qmin - r.zero_point) * r.scale;
  r.hi = (qmax - r.zero_point) * r.scale;
  note.clear();
  return r;
}

std::optional<HtmlWeightRanges> weight_ranges(const ir::Model& model, const ir::Model& reference, const judge::LayerStat& layer,
                                              size_t max_channels) {
  const ir::Value* out = reference.graph->find_value(layer.value);
  const ir::Node* rn = out ? out->producer : nullptr;
  if (!rn) return std::nullopt;
  const std::optional<ir::Tensor> weight = constant_weight(rn->input(1));
  const ir::Tensor* wt = weight ? &*weight : nullptr;
  if (!wt || !is_float(wt->dtype()) || wt->numel() == 0) return std::nullopt;
  const int64_t axis = channel_axis(*rn, wt->rank());
  if (axis == -1) return std::nullopt;
  HtmlWeightRanges w;
  w.node = layer.node;
  w.op = rn->op_type;
  w.weight = rn->input(1)->name;
  w.rank = layer.rank;
  w.introduced_rank = layer.introduced_rank;
  w.axis = std::max<int64_t>(0, axis);
  const size_t channels = axis < 0 ? 1 : static_cast<size_t>(wt->dims()[static_cast<size_t>(axis)]);
  size_t inner = 1;
  if (axis >= 0)
    for (size_t d = static_cast<size_t>(axis) + 1; d < wt->rank(); ++d) inner *= static_cast<size_t>(wt->dims()[d]);
  else
    inner = static_cast<size_t>(wt->numel());
  w.ch_min.assign(channels, std::numeric_limits<double>::infinity());
  w.ch_max.assign(channels, -std::numeric_limits<double>::infinity());
  ir::dispatch<MCC_FLOAT_DTYPES>(wt->dtype(), "weight ranges", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto data = wt->data<T>();
    for (size_t i = 0; i < data.size(); ++i) {
      const double x = static_cast<double>(data[i]);
      if (!std::isfinite(x)) continue;
      const size_t c = (i / inner) % channels;
      w.ch_min[c] = std::min(w.ch_min[c], x), w.ch_max[c] = std::max(w.ch_max[c], x);
    }
  });
  for (size_t c = 0; c < channels; ++c)
    if (w.ch_min[c] > w.ch_max[c]) w.ch_min[c] = w.ch_max[c] = 0;  // a channel of NaN/Inf only
  weight_quant(model, layer, 1, wt->rank(), channels, w);
  if (channels > max_channels) {
    w.ch_min.resize(max_channels), w.ch_max.resize(max_channels);
    if (!w.q_lo.empty()) w.q_lo.resize(max_channels), w.q_hi.resize(max_channels);
    w.quant_note += "; first " + std::to_string(max_channels) + " of " + std::to_string(channels) + " channels shown";
  }
  return w;
}

}  // namespace mcc::report
