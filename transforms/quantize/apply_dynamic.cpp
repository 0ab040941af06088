// Writing dynamic activation points (see quantize/apply_dynamic.h).
#include "transforms/quantize/apply_dynamic.h"

#include <map>
#include <utility>
#include <vector>

#include "ir/errors.h"
#include "ir/op_attrs.h"
#include "transforms/common/rewrite.h"
#include "transforms/quantize/apply_util.h"

namespace mcc::transforms::quantize {

namespace {

/// A weight written for MatMulInteger: int8 codes [K, N], scales and zero points.
struct IntegerWeight {
  ir::Value* codes = nullptr;
  ir::Value* scale = nullptr;
  ir::Value* zero_point = nullptr;
};

/// The output-channel axis of the node's weight: 1 for MatMul's [K, N], 0 for Gemm's transB [N, K].
int output_axis(const ir::Node& n) { return n.op_type == "Gemm" && ir::GemmAttrs(n).trans_b() ? 0 : 1; }

/// The [C, R] transpose of int8 matrix q [R, C].
ir::Tensor transposed(const ir::Tensor& q) {
  const int64_t rows = q.dims()[0], cols = q.dims()[1];
  ir::Tensor t = ir::Tensor::allocate(ir::DType::I8, {cols, rows});
  const auto src = q.data<int8_t>();
  int8_t* dst = t.mutable_data<int8_t>().data();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[static_cast<size_t>(r * cols + c)];
  return t;
}

IntegerWeight integer_weight(ir::Graph& g, const ir::Value& w, const QPoint& p, bool transpose) {
  if (!w.initializer || w.initializer->dtype() != ir::DType::F32 || w.initializer->rank() != 2)
    throw ModelError("weight '" + p.tensor + "' is not a float32 constant matrix");
  if (p.dtype != ir::DType::I8 || p.block_size > 0) throw ModelError("weight '" + p.tensor + "' must be int8 per tensor or per channel");
  check_channels(p, *w.initializer);
  for (int32_t z : p.zero_point)
    if (z != 0) throw ModelError("weight '" + p.tensor + "' must be symmetric (zero point 0)");
  ir::Tensor q = quantized_codes(ir::Tensor(*w.initializer), p);
  if (transpose) q = transposed(q);
  IntegerWeight out;
  out.codes = &g.add_initializer(g.unique_name(p.tensor + "_quantized"), std::move(q));
  out.scale = &g.add_initializer(g.unique_name(p.tensor + "_scale"), scale_tensor(p));
  out.zero_point = &g.add_initializer(g.unique_name(p.tensor + "_zero_point"), zero_point_tensor(p));
  return out;
}

ir::Value& typed(ir::Value& v, ir::DType dt, const ir::Shape& shape) {
  v.dtype = dt;
  v.shape = shape;
  return v;
}

/// Sum over K of the dequantized weight, one value per output column: what a row's centre c
/// contributes to every output, c * sum_k W[k, n]. `codes` is the written [K, N] int8 weight; the
/// scales follow the point (per output column, or one).
ir::Tensor column_sums(const ir::Tensor& codes, const QPoint& p) {
  const int64_t rows = codes.dims()[0], cols = codes.dims()[1];
  std::vector<double> sums(static_cast<size_t>(cols), 0.0);
  const auto q = codes.data<int8_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) sums[static_cast<size_t>(c)] += q[static_cast<size_t>(r * cols + c)];
  std::vector<float> out(sums.size());
  for (size_t n = 0; n < sums.size(); ++n) out[n] = static_cast<float>(sums[n] * (p.axis >= 0 ? p.scale.at(n) : p.scale.at(0)));
  return ir::Tensor::from_vector<float>({cols}, out);
}

/// The shape of a per-row statistic of v: v's shape with the last dimension 1.
ir::Shape row_shape(const ir::Value& v) {
  ir::Shape s = v.shape;
  if (s.rank_known() && s.rank() > 0) s.dims->back() = ir::Dim::of(1);
  return s;
}

class DynamicWriter {
 public:
  DynamicWriter(ir::Graph& g, const Plan& plan, std::set<std::string>& node_names)
      : g_(g), names_(node_names), opset_(plan.opset_to > 0 ? plan.opset_to : plan.opset_from) {
    for (const QPoint& p : plan.points)
      if (p.role == Role::Weight) weights_.emplace(p.tensor, &p);
  }

  void write(const QPoint& p) {
    if (p.role != Role::Activation || p.dtype != ir::DType::U8 || p.axis >= 0 || p.block_size > 0)
      throw ModelError("a dynamic point is a uint8 activation with one scale (DynamicQuantizeLinear)");
    ir::Value* a = g_.find_value(p.tensor);
    if (!a) throw ModelError("no tensor '" + p.tensor + "' in the model's main graph");
    if (a->initializer) throw ModelError("it is a constant, not an activation");
    if (p.consumers.empty()) throw ModelError("a dynamic point names no consumer");
    std::vector<ir::Node*> nodes;
    for (const std::string& label : p.consumers) {
      ir::Node* n = find_consumer(g_, label);
      if (!n || (n->op_type != "MatMul" && n->op_type != "Gemm") || n->input(0) != a)
        throw ModelError("consumer '" + label + "' is not a MatMul or Gemm node reading it as its first input");
      nodes.push_back(n);
    }
    const std::string name = a->name;
    const ir::Node* before = first_consumer(g_, *a);
    Rows rows;
    ir::Value* quantized_input = a;
    if (p.per_token) {
      rows = normalise_rows(*a, before, p.row_ends_on_codes);
      quantized_input = rows.normalised;
    }
    ir::Node& dq = g_.add_node("DynamicQuantizeLinear", "", unique_node_name(g_, names_, name + "_DynamicQuantizeLinear"), {quantized_input},
                               {g_.unique_name(name + "_quantized"), g_.unique_name(name + "_scale"),
                                g_.unique_name(name + "_zero_point")},
                               before);
    typed(*dq.outputs[0], ir::DType::U8, a->shape);
    typed(*dq.outputs[1], ir::DType::F32, ir::Shape::of({}));
    typed(*dq.outputs[2], ir::DType::U8, ir::Shape::of({}));
    for (size_t i = 0; i < nodes.size(); ++i) {
      try {
        rewrite(*nodes[i], dq, p.per_token ? &rows : nullptr);
      } catch (ModelError& e) {
        e.add_context("node '" + p.consumers[i] + "'");
        throw;
      }
    }
  }

  /// Removes the float weights nothing reads any more; returns the weight points written.
  std::set<std::string> finish() {
    for (const std::string& w : used_)
      if (ir::Value* v = g_.find_value(w)) drop_if_unused(v);
    return used_;
  }

 private:
  /// Per-row statistics of a per_token point: centre c, scale s (at least kTiny, so a constant row
  /// divides by a positive number) and (A - c) / s; A = c + s * normalised undoes them.
  struct Rows {
    ir::Value* centre = nullptr;
    ir::Value* scale = nullptr;
    ir::Value* normalised = nullptr;
  };

  ir::Value& constant(const std::string& base, float v) {
    return g_.add_initializer(g_.unique_name(base), ir::Tensor::scalar<float>(v));
  }

  ir::Value& node1(const char* op, const std::string& base, std::vector<ir::Value*> in, const ir::Shape& shape, const ir::Node* before) {
    ir::Node& n = g_.add_node(op, "", unique_node_name(g_, names_, base + "_" + op), std::move(in), {g_.unique_name(base)}, before);
    return typed(*n.outputs[0], ir::DType::F32, shape);
  }

  ir::Value& reduce(const char* op, ir::Value& a, const std::string& base, const ir::Node* before) {
    std::vector<ir::Value*> in{&a};
    // ReduceMax/ReduceMin take their axes as an attribute before opset 18 and as an input from it.
    if (opset_ >= 18) in.push_back(&g_.add_initializer(g_.unique_name(a.name + "_last_axis"), ir::Tensor::from_vector<int64_t>({1}, {-1})));
    ir::Node& n = g_.add_node(op, "", unique_node_name(g_, names_, base + "_" + op), std::move(in), {g_.unique_name(base)}, before);
    if (opset_ < 18) n.set_attr(ir::Attribute{"axes", ir::AttrKind::Ints, std::vector<int64_t>{-1}, "", "", ""});
    n.set_attr(ir::Attribute{"keepdims", ir::AttrKind::Int, int64_t{1}, "", "", ""});
    return typed(*n.outputs[0], ir::DType::F32, row_shape(a));
  }

  /// The row statistics of a per_token point and A normalised by them.
  /// ends_on_codes (row_ends_on_codes): s = (max - min) * 128 / 255, c = min + s, rows in
  /// [-1, 127/128]. Over a tensor whose rows all reach both ends, DynamicQuantizeLinear's range
  /// is then [-1, 127/128], its scale 1/128 and its zero point 128 exactly, and each row's min and
  /// max quantize to codes 0 and 255. The form before: c = (max + min) / 2, s = (max - min) / 2,
  /// rows in [-1, 1]; its zero point is round(127.5) and every row's ends lie halfway between two
  /// codes, so runtimes (and ONNX Runtime's fused and unfused kernels) round them apart: on
  /// MiniLM-L6 per_token, ONNX Runtime against itself 0.9986-0.9994 sentence cosine,
  /// 0.9993-0.9996 with the ends on codes.
  Rows normalise_rows(ir::Value& a, const ir::Node* before, bool ends_on_codes) {
    static constexpr float kTiny = 1e-30f;
    const std::string& b = a.name;
    const ir::Shape rs = row_shape(a);
    ir::Value& hi = reduce("ReduceMax", a, b + "_row_max", before);
    ir::Value& lo = reduce("ReduceMin", a, b + "_row_min", before);
    Rows r;
    if (ends_on_codes) {
      ir::Value& width = node1("Sub", b + "_row_width", {&hi, &lo}, rs, before);
      ir::Value& step = node1("Mul", b + "_row_step", {&width, &constant(b + "_128_over_255", 128.f / 255.f)}, rs, before);
      r.scale = &node1("Max", b + "_row_scale", {&step, &constant(b + "_tiny", kTiny)}, rs, before);
      r.centre = &node1("Add", b + "_row_centre", {&lo, r.scale}, rs, before);
    } else {
      ir::Value& half = constant(b + "_half", 0.5f);
      ir::Value& sum = node1("Add", b + "_row_sum", {&hi, &lo}, rs, before);
      ir::Value& width = node1("Sub", b + "_row_width", {&hi, &lo}, rs, before);
      r.centre = &node1("Mul", b + "_row_centre", {&sum, &half}, rs, before);
      ir::Value& half_width = node1("Mul", b + "_row_half_width", {&width, &half}, rs, before);
      r.scale = &node1("Max", b + "_row_scale", {&half_width, &constant(b + "_tiny", kTiny)}, rs, before);
    }
    ir::Value& centred = node1("Sub", b + "_centred", {&a, r.centre}, a.shape, before);
    r.normalised = &node1("Div", b + "_normalised", {&centred, r.scale}, a.shape, before);
    return r;
  }

  void rewrite(ir::Node& n, ir::Node& dq, const Rows* rows) {
    const ir::Value* w = n.input(1);
    const auto it = w ? weights_.find(w->name) : weights_.end();
    if (it == weights_.end()) throw ModelError("its weight has no weight point");
    const QPoint& wp = *it->second;
    const int axis = output_axis(n);
    if (wp.axis >= 0 && wp.axis != axis)
      throw ModelError("weight '" + wp.tensor + "' has its scales on axis " + std::to_string(wp.axis) + ", not the output axis " +
                       std::to_string(axis));
    ir::Value* bias = nullptr;
    if (n.op_type == "Gemm") {
      const ir::GemmAttrs ga(n);
      bias = n.input(2);
      if (ga.trans_a() || ga.alpha() != 1.f || (bias && ga.beta() != 1.f))
        throw ModelError("a Gemm with transA, alpha != 1 or beta != 1 has no dynamic form");
    }
    const std::pair<std::string, bool> key{wp.tensor, axis == 0};
    if (!made_.count(key)) made_[key] = integer_weight(g_, *w, wp, axis == 0);
    used_.insert(wp.tensor);
    const IntegerWeight& qw = made_[key];

    ir::Value& y = *n.outputs.at(0);
    const std::string yn = y.name;
    const std::string base = n.name.empty() ? yn : n.name;
    ir::Node& mm = g_.add_node("MatMulInteger", "", unique_node_name(g_, names_, base + "_MatMulInteger"),
                               {dq.outputs[0], qw.codes, dq.outputs[2], qw.zero_point}, {g_.unique_name(yn + "_int32")}, &n);
    typed(*mm.outputs[0], ir::DType::I32, y.shape);
    ir::Node& cast = g_.add_node("Cast", "", unique_node_name(g_, names_, base + "_Cast"), {mm.outputs[0]},
                                 {g_.unique_name(yn + "_int32_float")}, &n);
    cast.set_attr(ir::Attribute{"to", ir::AttrKind::Int, int64_t{1}, "", "", ""});  // FLOAT
    typed(*cast.outputs[0], ir::DType::F32, y.shape);
    ir::Node& scales = g_.add_node("Mul", "", unique_node_name(g_, names_, base + "_scales_Mul"), {dq.outputs[1], qw.scale},
                                   {g_.unique_name(yn + "_scale")}, &n);
    typed(*scales.outputs[0], ir::DType::F32, ir::Shape::of(qw.scale->initializer->dims()));
    ir::Node& mul = g_.add_node("Mul", "", unique_node_name(g_, names_, base + "_Mul"), {cast.outputs[0], scales.outputs[0]},
                                {g_.unique_name(yn + (rows ? "_normalised" : bias ? "_unbiased" : "_dynamic"))}, &n);
    ir::Value* out = &typed(*mul.outputs[0], ir::DType::F32, y.shape);
    if (rows) {
      // Y = Y_normalised * s + c * column_sums(W): undoes (A - c) / s row by row.
      if (!sums_.count(key))
        sums_[key] = &g_.add_initializer(g_.unique_name(wp.tensor + "_column_sums"),
                                         column_sums(*made_[key].codes->initializer, wp));
      ir::Value& scaled = node1("Mul", yn + "_rescaled", {out, rows->scale}, y.shape, &n);
      ir::Value& offset = node1("Mul", yn + "_row_offset", {rows->centre, sums_[key]}, y.shape, &n);
      out = &node1("Add", yn + (bias ? "_unbiased" : "_dynamic"), {&scaled, &offset}, y.shape, &n);
    }
    if (bias) {
      ir::Node& add = g_.add_node("Add", "", unique_node_name(g_, names_, base + "_bias_Add"), {out, bias},
                                  {g_.unique_name(yn + "_dynamic")}, &n);
      out = &typed(*add.outputs[0], ir::DType::F32, y.shape);
    }
    take_over_output(g_, n, y, *out);
  }

  ir::Graph& g_;
  std::set<std::string>& names_;
  std::map<std::string, const QPoint*> weights_;
  int64_t opset_;
  std::map<std::pair<std::string, bool>, IntegerWeight> made_;
  std::map<std::pair<std::string, bool>, ir::Value*> sums_;
  std::set<std::string> used_;
};

}  // namespace

std::set<std::string> write_dynamic_points(ir::Graph& g, const Plan& plan, std::set<std::string>& node_names) {
  DynamicWriter writer(g, plan, node_names);
  for (const QPoint& p : plan.points) {
    if (!p.dynamic) continue;
    try {
      writer.write(p);
    } catch (ModelError& e) {
      e.add_context("activation '" + p.tensor + "'");
      throw;
    }
  }
  return writer.finish();
}

}  // namespace mcc::transforms::quantize
