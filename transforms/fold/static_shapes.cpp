// Static type-and-shape propagation (see static_shapes.h). Each op's rule follows the ONNX
// operator spec; a rule that meets anything it does not handle leaves the outputs unknown.
#include "transforms/fold/static_shapes.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "transforms/common/rewrite.h"

namespace mcc::transforms {
namespace {

using Dims = std::vector<int64_t>;
using ir::DType;

std::optional<Dims> const_ints(const ir::Value* v) {
  if (!is_constant(v)) return std::nullopt;
  const ir::Tensor& t = *v->initializer;
  Dims out;
  if (t.dtype() == DType::I64) for (int64_t x : t.data<int64_t>()) out.push_back(x);
  else if (t.dtype() == DType::I32) for (int32_t x : t.data<int32_t>()) out.push_back(x);
  else return std::nullopt;
  return out;
}

std::optional<std::vector<double>> const_floats(const ir::Value* v) {
  if (!is_constant(v)) return std::nullopt;
  const ir::Tensor& t = *v->initializer;
  std::vector<double> out;
  if (t.dtype() == DType::F32) for (float x : t.data<float>()) out.push_back(x);
  else if (t.dtype() == DType::F64) for (double x : t.data<double>()) out.push_back(x);
  else return std::nullopt;
  return out;
}

std::optional<Dims> broadcast(const std::vector<std::optional<Dims>>& shapes) {
  size_t r = 0;
  for (const auto& s : shapes) {
    if (!s) return std::nullopt;
    r = std::max(r, s->size());
  }
  Dims out(r, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s->size(); ++i) {
      const int64_t d = (*s)[s->size() - 1 - i];
      int64_t& o = out[r - 1 - i];
      if (d == o || d == 1) continue;
      if (o == 1) o = d;
      else return std::nullopt;  // not broadcastable: let the runtime complain
    }
  return out;
}

bool norm_axis(int64_t& a, int64_t rank) {
  if (a < 0) a += rank;
  return a >= 0 && a < rank;
}

const std::set<std::string, std::less<>> kSameShape = {
    "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "Ceil", "Floor", "Round",
    "Sign", "Reciprocal", "Softplus", "Softsign", "Elu", "Selu", "LeakyRelu", "HardSigmoid",
    "HardSwish", "Mish", "Gelu", "Clip", "Identity", "Dropout", "Softmax", "LogSoftmax", "Hardmax",
    "LRN", "InstanceNormalization", "BatchNormalization", "LayerNormalization", "Not", "Sin", "Cos",
    "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "ThresholdedRelu",
    "Celu", "Shrink", "CumSum", "MeanVarianceNormalization", "GroupNormalization", "IsNaN", "IsInf"};
const std::set<std::string, std::less<>> kBroadcast = {
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Mod", "PRelu", "Equal", "Less",
    "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "BitShift", "Where"};
const std::set<std::string, std::less<>> kBoolOut = {
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf"};
const std::set<std::string, std::less<>> kReduce = {
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

// Output size of a sliding window along one axis (Conv, pools).
std::optional<int64_t> window_out(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pb, int64_t pe,
                                  const std::string& auto_pad, bool ceil_mode) {
  if (stride <= 0 || dil <= 0 || k <= 0) return std::nullopt;
  const int64_t ek = dil * (k - 1) + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return (in + stride - 1) / stride;
  if (auto_pad == "VALID") return in < ek ? std::nullopt : std::optional<int64_t>((in - ek) / stride + 1);
  const int64_t span = in + pb + pe - ek;
  if (span < 0) return std::nullopt;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pb) --out;  // last window must start inside the input
  return out;
}

}  // namespace

StaticShapes::StaticShapes(const ir::Model& m) {
  if (m.graph) run_graph(*m.graph);
}

TypeShape StaticShapes::of(const ir::Value* v) const {
  TypeShape ts;
  if (!v) return ts;
  if (v->initializer) {
    ts.dtype = v->initializer->dtype();
    if (!v->is_graph_input) ts.dims = v->initializer->dims();
    return ts;
  }
  auto it = table_.find(v);
  if (it != table_.end()) ts = it->second;
  if (ts.dtype == DType::Undefined) ts.dtype = v->dtype;
  if (!ts.dims) ts.dims = v->shape.static_dims();  // a declared fully static shape
  return ts;
}

void StaticShapes::set(const ir::Value* v, TypeShape ts) {
  if (!v) return;
  TypeShape& cur = table_[v];
  if (ts.dtype != DType::Undefined) cur.dtype = ts.dtype;
  if (ts.dims) cur.dims = std::move(ts.dims);
}

void StaticShapes::run_graph(const ir::Graph& g) {
  for (const ir::Node* n : g.nodes()) {
    for (const ir::Graph* sg : n->subgraphs()) run_graph(*sg);
    infer(*n);
  }
}

void StaticShapes::infer(const ir::Node& n) {
  if (!(n.domain.empty() || n.domain == "ai.onnx") || n.outputs.empty()) return;
  auto in = [&](size_t i) { return of(n.input(i)); };
  auto dims_in = [&](size_t i) { return of(n.input(i)).dims; };
  const std::string& op = n.op_type;
  const DType dt0 = n.input(0) ? in(0).dtype : DType::Undefined;
  auto out = [&](size_t i, DType dt, std::optional<Dims> d) {
    if (i < n.outputs.size()) set(n.outputs[i], TypeShape{dt, std::move(d)});
  };

  if (kSameShape.count(op)) {
    out(0, kBoolOut.count(op) ? DType::Bool : dt0, dims_in(0));
    if (op == "Dropout" && n.outputs.size() > 1) out(1, n.since_version >= 10 ? DType::Bool : dt0, dims_in(0));
    return;
  }
  if (kBroadcast.count(op)) {
    std::vector<std::optional<Dims>> shapes;
    for (size_t i = 0; i < n.inputs.size(); ++i) shapes.push_back(dims_in(i));
    const DType dt = kBoolOut.count(op) ? DType::Bool : op == "Where" ? in(1).dtype : dt0;
    out(0, dt, broadcast(shapes));
    return;
  }
  if (op == "Cast") { out(0, static_cast<DType>(n.attr_int("to", 0)), dims_in(0)); return; }
  if (op == "CastLike") { out(0, in(1).dtype, dims_in(0)); return; }
  if (op == "Shape") {
    auto d = dims_in(0);
    if (!d) return out(0, DType::I64, std::nullopt);
    int64_t r = static_cast<int64_t>(d->size()), s = n.attr_int("start", 0), e = n.attr_int("end", r);
    s = std::clamp(s < 0 ? s + r : s, int64_t{0}, r);
    e = std::clamp(e < 0 ? e + r : e, int64_t{0}, r);
    out(0, DType::I64, Dims{std::max<int64_t>(0, e - s)});
    return;
  }
  if (op == "Size") { out(0, DType::I64, Dims{}); return; }
  if (op == "ConstantOfShape") {
    const ir::Tensor* v = n.attr_tensor("value");
    out(0, v ? v->dtype() : DType::F32, const_ints(n.input(0)));
    return;
  }

  auto x = dims_in(0);
  if (!x) return;
  const int64_t r = static_cast<int64_t>(x->size());

  if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    if (r < 3) return;
    Dims k;
    int64_t c_out = (*x)[1];
    if (op == "Conv") {
      auto w = dims_in(1);
      if (!w || w->size() != x->size()) return;
      c_out = (*w)[0];
      k.assign(w->begin() + 2, w->end());
    } else {
      k = n.attr_ints("kernel_shape");
    }
    const size_t sp = static_cast<size_t>(r - 2);
    if (k.size() != sp) return;
    const Dims strides = n.attr_ints("strides", Dims(sp, 1)), dil = n.attr_ints("dilations", Dims(sp, 1));
    const Dims pads = n.attr_ints("pads", Dims(2 * sp, 0));
    const std::string ap = n.attr_string("auto_pad", "NOTSET");
    if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp) return;
    Dims o{(*x)[0], c_out};
    for (size_t i = 0; i < sp; ++i) {
      auto v = window_out((*x)[2 + i], k[i], strides[i], dil[i], pads[i], pads[sp + i], ap,
                          n.attr_int("ceil_mode", 0) != 0);
      if (!v) return;
      o.push_back(*v);
    }
    out(0, dt0, o);
    if (op == "MaxPool" && n.outputs.size() > 1) out(1, DType::I64, o);
    return;
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool") {
    Dims o = *x;
    for (size_t i = 2; i < o.size(); ++i) o[i] = 1;
    return out(0, dt0, o);
  }
  if (op == "Gemm") {
    auto b = dims_in(1);
    if (r != 2 || !b || b->size() != 2) return;
    const int64_t m = n.attr_int("transA", 0) ? (*x)[1] : (*x)[0];
    const int64_t nn = n.attr_int("transB", 0) ? (*b)[0] : (*b)[1];
    return out(0, dt0, Dims{m, nn});
  }
  if (op == "MatMul") {
    auto b = dims_in(1);
    if (!b || b->empty() || x->empty()) return;
    Dims a2 = *x, b2 = *b;
    if (a2.size() == 1) a2.insert(a2.begin(), 1);
    if (b2.size() == 1) b2.push_back(1);
    if (a2.back() != b2[b2.size() - 2]) return;
    auto batch = broadcast({Dims(a2.begin(), a2.end() - 2), Dims(b2.begin(), b2.end() - 2)});
    if (!batch) return;
    Dims o = *batch;
    if (x->size() > 1) o.push_back(a2[a2.size() - 2]);
    if (b->size() > 1) o.push_back(b2.back());
    return out(0, dt0, o);
  }
  if (op == "Reshape") {
    auto s = n.since_version >= 5 ? const_ints(n.input(1)) : std::optional<Dims>(n.attr_ints("shape"));
    if (!s) return;
    Dims o = *s;
    const bool allowzero = n.attr_int("allowzero", 0) != 0;
    int64_t known = 1, infer_at = -1;
    const int64_t total = ir::checked_numel(*x);
    for (size_t i = 0; i < o.size(); ++i) {
      if (o[i] == 0 && !allowzero) {
        if (i >= x->size()) return;
        o[i] = (*x)[i];
      }
      if (o[i] == -1) { if (infer_at >= 0) return; infer_at = static_cast<int64_t>(i); continue; }
      if (o[i] < 0) return;
      known *= o[i];
    }
    if (infer_at >= 0) {
      if (known == 0 || total % known) return;
      o[static_cast<size_t>(infer_at)] = total / known;
    } else if (known != total) {
      return;
    }
    return out(0, dt0, o);
  }
  if (op == "Flatten") {
    int64_t a = n.attr_int("axis", 1);
    if (a < 0) a += r;
    if (a < 0 || a > r) return;
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < r; ++i) (i < a ? outer : inner) *= (*x)[static_cast<size_t>(i)];
    return out(0, dt0, Dims{outer, inner});
  }
  if (op == "Transpose") {
    Dims perm = n.attr_ints("perm");
    if (perm.empty()) for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
    if (static_cast<int64_t>(perm.size()) != r) return;
    Dims o;
    for (int64_t p : perm) { if (!norm_axis(p, r)) return; o.push_back((*x)[static_cast<size_t>(p)]); }
    return out(0, dt0, o);
  }
  if (op == "Concat") {
    int64_t a = n.attr_int("axis", 0);
    if (!norm_axis(a, r)) return;
    Dims o = *x;
    o[static_cast<size_t>(a)] = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto d = dims_in(i);
      if (!d || d->size() != x->size()) return;
      o[static_cast<size_t>(a)] += (*d)[static_cast<size_t>(a)];
    }
    return out(0, dt0, o);
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::optional<Dims> axes = n.since_version >= 13 ? (n.input(1) ? const_ints(n.input(1)) : std::optional<Dims>(Dims{}))
                                                     : std::optional<Dims>(n.attr_ints("axes"));
    if (!axes) return;
    if (op == "Unsqueeze") {
      const int64_t orank = r + static_cast<int64_t>(axes->size());
      std::vector<bool> is_new(static_cast<size_t>(orank), false);
      for (int64_t a : *axes) { if (!norm_axis(a, orank)) return; is_new[static_cast<size_t>(a)] = true; }
      Dims o;
      size_t j = 0;
      for (int64_t i = 0; i < orank; ++i) o.push_back(is_new[static_cast<size_t>(i)] ? 1 : (*x)[j++]);
      if (j != x->size()) return;
      return out(0, dt0, o);
    }
    std::vector<bool> drop(x->size(), false);
    for (int64_t a : *axes) { if (!norm_axis(a, r) || (*x)[static_cast<size_t>(a)] != 1) return; drop[static_cast<size_t>(a)] = true; }
    Dims o;
    for (size_t i = 0; i < x->size(); ++i)
      if (!(axes->empty() ? (*x)[i] == 1 : drop[i])) o.push_back((*x)[i]);
    return out(0, dt0, o);
  }
  if (op == "Slice") {
    Dims starts, ends, axes, steps;
    if (n.since_version >= 10) {
      auto s = const_ints(n.input(1)), e = const_ints(n.input(2));
      if (!s || !e) return;
      starts = *s; ends = *e;
      if (n.input(3)) { auto a = const_ints(n.input(3)); if (!a) return; axes = *a; }
      if (n.input(4)) { auto st = const_ints(n.input(4)); if (!st) return; steps = *st; }
    } else {
      starts = n.attr_ints("starts"); ends = n.attr_ints("ends"); axes = n.attr_ints("axes");
    }
    if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return;
    Dims o = *x;
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t a = axes[i];
      if (!norm_axis(a, r) || steps[i] == 0) return;
      const int64_t d = (*x)[static_cast<size_t>(a)], st = steps[i];
      int64_t s = starts[i] < 0 ? starts[i] + d : starts[i], e = ends[i] < 0 ? ends[i] + d : ends[i];
      if (st > 0) { s = std::clamp(s, int64_t{0}, d); e = std::clamp(e, int64_t{0}, d); }
      else { s = std::clamp(s, int64_t{0}, d - 1); e = std::clamp(e, int64_t{-1}, d - 1); }
      const int64_t len = st > 0 ? (e - s + st - 1) / st : (s - e + (-st) - 1) / (-st);
      o[static_cast<size_t>(a)] = std::max<int64_t>(0, len);
    }
    return out(0, dt0, o);
  }
  if (op == "Gather") {
    auto idx = dims_in(1);
    int64_t a = n.attr_int("axis", 0);
    if (!idx || !norm_axis(a, r)) return;
    Dims o(x->begin(), x->begin() + a);
    o.insert(o.end(), idx->begin(), idx->end());
    o.insert(o.end(), x->begin() + a + 1, x->end());
    return out(0, dt0, o);
  }
  if (op == "Split") {
    int64_t a = n.attr_int("axis", 0);
    if (!norm_axis(a, r)) return;
    const int64_t d = (*x)[static_cast<size_t>(a)];
    const int64_t k = static_cast<int64_t>(n.outputs.size());
    std::optional<Dims> split = n.since_version >= 13 ? (n.input(1) ? const_ints(n.input(1)) : std::optional<Dims>(Dims{}))
                                                      : std::optional<Dims>(n.attr_ints("split"));
    if (!split) return;
    if (split->empty()) {
      const int64_t chunk = (d + k - 1) / k;
      for (int64_t i = 0; i < k; ++i) split->push_back(std::min(chunk, d - i * chunk));
    }
    if (static_cast<int64_t>(split->size()) != k) return;
    for (int64_t i = 0; i < k; ++i) {
      Dims o = *x;
      o[static_cast<size_t>(a)] = (*split)[static_cast<size_t>(i)];
      out(static_cast<size_t>(i), dt0, o);
    }
    return;
  }
  if (op == "Expand") {
    auto s = const_ints(n.input(1));
    if (!s) return;
    return out(0, dt0, broadcast({x, s}));
  }
  if (op == "Tile") {
    auto rep = const_ints(n.input(1));
    if (!rep || static_cast<int64_t>(rep->size()) != r) return;
    Dims o = *x;
    for (size_t i = 0; i < o.size(); ++i) o[i] *= (*rep)[i];
    return out(0, dt0, o);
  }
  if (op == "Pad") {
    auto pads = n.since_version >= 11 ? const_ints(n.input(1)) : std::optional<Dims>(n.attr_ints("pads"));
    if (!pads || n.input(3)) return;  // axes input: left unknown
    if (static_cast<int64_t>(pads->size()) != 2 * r) return;
    Dims o = *x;
    for (int64_t i = 0; i < r; ++i) o[static_cast<size_t>(i)] += (*pads)[static_cast<size_t>(i)] + (*pads)[static_cast<size_t>(i + r)];
    return out(0, dt0, o);
  }
  if (op == "Resize" || op == "Upsample") {
    if (n.since_version >= 11 && op == "Resize") {
      if (n.input(3)) {
        auto sizes = const_ints(n.input(3));
        if (sizes && static_cast<int64_t>(sizes->size()) == r && !n.has_attr("axes")) return out(0, dt0, sizes);
        return;
      }
    }
    const ir::Value* sv = op == "Upsample" ? (n.since_version >= 9 ? n.input(1) : nullptr)
                                           : (n.since_version >= 11 ? n.input(2) : n.input(1));
    std::optional<std::vector<double>> scales =
        sv ? const_floats(sv) : std::optional<std::vector<double>>();
    if (!sv && op == "Upsample") {
      auto f = n.attr_floats("scales");
      scales = std::vector<double>(f.begin(), f.end());
    }
    if (!scales || static_cast<int64_t>(scales->size()) != r || n.has_attr("axes")) return;
    Dims o = *x;
    for (size_t i = 0; i < o.size(); ++i) o[i] = static_cast<int64_t>(std::floor(static_cast<double>(o[i]) * (*scales)[i]));
    return out(0, dt0, o);
  }
  if (kReduce.count(op) || op == "ArgMax" || op == "ArgMin") {
    const bool arg = op == "ArgMax" || op == "ArgMin";
    const bool keep = n.attr_int("keepdims", 1) != 0;
    std::optional<Dims> axes;
    if (arg) axes = Dims{n.attr_int("axis", 0)};
    else if (n.has_attr("axes")) axes = n.attr_ints("axes");
    else if (n.input(1)) axes = const_ints(n.input(1));
    else axes = Dims{};
    if (!axes) return;
    if (axes->empty() && n.attr_int("noop_with_empty_axes", 0)) return out(0, dt0, x);
    std::vector<bool> red(x->size(), axes->empty());
    for (int64_t a : *axes) { if (!norm_axis(a, r)) return; red[static_cast<size_t>(a)] = true; }
    Dims o;
    for (size_t i = 0; i < x->size(); ++i) {
      if (!red[i]) o.push_back((*x)[i]);
      else if (keep) o.push_back(1);
    }
    return out(0, arg ? DType::I64 : dt0, o);
  }
}

}  // namespace mcc::transforms
