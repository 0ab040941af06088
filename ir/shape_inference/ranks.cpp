// Ranks of values where dims are dynamic (see ranks.h).
#include "ir/shape_inference/ranks.h"

#include <algorithm>
#include <string_view>

#include "ir/op_facts.h"

namespace mcc::ir {
namespace {

/// The tensor a value always holds: an initializer that is not a graph input, or a Constant
/// node's `value`; nullptr otherwise.
const Tensor* constant_tensor(const Value* v) {
  if (!v) return nullptr;
  if (v->initializer) return v->is_graph_input ? nullptr : &*v->initializer;
  const Node* p = v->producer;
  return p && p->is("Constant") ? p->attr_tensor("value") : nullptr;
}

/// How many axes a Squeeze/Unsqueeze/Reduce node names (attribute, else constant input 1).
std::optional<int64_t> axes_count(const Node& n) {
  if (n.has_attr("axes")) return static_cast<int64_t>(n.attr_ints("axes").size());
  if (!n.input(1)) return 0;
  const Tensor* t = constant_tensor(n.input(1));
  if (!t) return std::nullopt;
  return t->numel();
}

/// Elements [start, end) by step of an axis of length len, with ONNX Slice's clamping.
int64_t slice_length(int64_t len, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += len;
  if (end < 0) end += len;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, len);
    end = std::clamp<int64_t>(end, 0, len);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = std::clamp<int64_t>(start, 0, len - 1);
  end = std::clamp<int64_t>(end, -1, len - 1);
  return start > end ? (start - end - step - 1) / -step : 0;
}

bool keeps_input_rank(std::string_view op) {
  static constexpr std::string_view kOps[] = {
      "AveragePool", "Cast", "CastLike", "Concat", "Conv", "ConvTranspose", "DepthToSpace", "Dropout", "GlobalAveragePool",
      "GlobalLpPool", "GlobalMaxPool", "LpPool", "MaxPool", "Pad", "Resize", "Slice", "SpaceToDepth", "Split", "Tile",
      "TopK", "Upsample"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

}  // namespace

Ranks::Ranks(const Model& m) : shapes_(m) {
  if (m.graph) run_graph(*m.graph);
}

std::optional<int64_t> Ranks::of(const Value* v) const {
  if (!v) return std::nullopt;
  if (const Tensor* t = constant_tensor(v)) return static_cast<int64_t>(t->rank());
  if (v->shape.rank_known()) return static_cast<int64_t>(v->shape.rank());
  if (const auto dims = shapes_.of(v).dims) return static_cast<int64_t>(dims->size());
  const auto it = table_.find(v);
  if (it == table_.end()) return std::nullopt;
  return it->second;
}

void Ranks::run_graph(const Graph& g) {
  for (const Node* n : g.nodes()) {
    for (const Graph* sg : n->subgraphs()) run_graph(*sg);
    infer(*n);
  }
}

/// The number of elements of a 1-D shape operand (Reshape's `shape`, Expand's `shape`), also
/// where it is computed from a dynamic shape: Shape (the rank of its input), Cast/Identity,
/// Concat of 1-D pieces, Unsqueeze of a scalar, Slice with constant bounds.
std::optional<int64_t> Ranks::shape_length(const Value* v, int depth) const {
  if (!v || depth > 16) return std::nullopt;
  if (const Tensor* t = constant_tensor(v)) return t->rank() == 1 ? std::optional<int64_t>(t->numel()) : std::nullopt;
  if (const auto dims = shapes_.of(v).dims) return dims->size() == 1 ? std::optional<int64_t>((*dims)[0]) : std::nullopt;
  const Node* n = v->producer;
  if (!n || !(n->domain.empty() || n->domain == "ai.onnx")) return std::nullopt;
  const std::string& op = n->op_type;
  if (op == "Cast" || op == "Identity") return shape_length(n->input(0), depth + 1);
  if (op == "Shape") {
    const auto r = of(n->input(0));
    if (!r) return std::nullopt;
    return slice_length(*r, n->attr_int("start", 0), n->attr_int("end", *r), 1);
  }
  if (op == "Concat") {
    int64_t sum = 0;
    for (const Value* in : n->inputs) {
      const auto len = shape_length(in, depth + 1);
      if (!len) return std::nullopt;
      sum += *len;
    }
    return sum;
  }
  if (op == "Unsqueeze") {
    const auto r = of(n->input(0));
    return r && *r == 0 && axes_count(*n) == 1 ? std::optional<int64_t>(1) : std::nullopt;
  }
  if (op == "Slice") {
    const auto len = shape_length(n->input(0), depth + 1);
    const auto bound = [&](const char* attr, size_t input) -> std::optional<int64_t> {
      if (attr && n->has_attr(attr)) {
        const auto vals = n->attr_ints(attr);
        return vals.size() == 1 ? std::optional<int64_t>(vals[0]) : std::nullopt;
      }
      const Tensor* t = constant_tensor(n->input(input));
      if (!t || t->numel() != 1) return std::nullopt;
      return t->dtype() == DType::I64 ? t->data<int64_t>()[0] : t->dtype() == DType::I32 ? t->data<int32_t>()[0] : std::optional<int64_t>();
    };
    const auto start = bound("starts", 1), end = bound("ends", 2);
    const auto step = n->input(4) ? bound(nullptr, 4) : std::optional<int64_t>(1);
    if (!len || !start || !end || !step || *step == 0) return std::nullopt;
    return slice_length(*len, *start, *end, *step);
  }
  return std::nullopt;
}

void Ranks::infer(const Node& n) {
  if (n.outputs.empty() || !(n.domain.empty() || n.domain == "ai.onnx")) return;
  auto set = [&](size_t k, std::optional<int64_t> r) {
    if (k < n.outputs.size() && n.outputs[k] && r && *r >= 0) table_[n.outputs[k]] = *r;
  };
  const std::optional<int64_t> r0 = of(n.input(0));
  const std::string& op = n.op_type;
  switch (shape_kind(op)) {
    case ShapeKind::Same:
    case ShapeKind::SameBool: return set(0, r0);
    case ShapeKind::Broadcast:
    case ShapeKind::BroadcastBool: {
      int64_t r = 0;
      for (const Value* in : n.inputs) {
        const auto ri = of(in);
        if (in && !ri) return;
        if (ri) r = std::max(r, *ri);
      }
      return set(0, r);
    }
    case ShapeKind::Reduce: {
      if (!r0) return;
      if (n.attr_int("keepdims", 1) != 0) return set(0, r0);
      const auto k = axes_count(n);
      if (!k) return;
      return set(0, *k == 0 ? (n.attr_int("noop_with_empty_axes", 0) ? *r0 : 0) : *r0 - *k);
    }
    default: break;
  }
  if (keeps_input_rank(op)) {
    for (size_t k = 0; k < n.outputs.size(); ++k) set(k, r0);
    return;
  }
  if (op == "Transpose") return set(0, n.has_attr("perm") ? std::optional<int64_t>(n.attr_ints("perm").size()) : r0);
  if (op == "Flatten" || op == "Gemm") return set(0, 2);
  if (op == "Shape") return set(0, 1);
  if (op == "Size") return set(0, 0);
  if (op == "Constant") {
    if (const Tensor* t = n.attr_tensor("value")) set(0, static_cast<int64_t>(t->rank()));
    return;
  }
  if (op == "Reshape" || op == "ConstantOfShape") return set(0, shape_length(n.input(op == "Reshape" ? 1 : 0), 0));
  if (op == "Expand") {
    const auto len = shape_length(n.input(1), 0);
    if (r0 && len) set(0, std::max(*r0, *len));
    return;
  }
  if (op == "Squeeze" || op == "Unsqueeze") {
    const auto k = axes_count(n);
    if (!r0 || !k || (op == "Squeeze" && *k == 0)) return;  // Squeeze without axes: depends on the dims
    return set(0, op == "Squeeze" ? *r0 - *k : *r0 + *k);
  }
  if (op == "MatMul") {
    const auto r1 = of(n.input(1));
    if (!r0 || !r1) return;
    if (*r0 >= 2 && *r1 >= 2) return set(0, std::max(*r0, *r1));
    return set(0, *r0 + *r1 - 2);  // a 1-D operand loses its axis
  }
  if (op == "Gather") {
    const auto r1 = of(n.input(1));
    if (r0 && r1) set(0, *r0 - 1 + *r1);
    return;
  }
  if (op == "ArgMax" || op == "ArgMin") {
    if (r0) set(0, n.attr_int("keepdims", 1) ? *r0 : *r0 - 1);
    return;
  }
  if (op == "Where") {
    int64_t r = 0;
    for (const Value* in : n.inputs) {
      const auto ri = of(in);
      if (!ri) return;
      r = std::max(r, *ri);
    }
    set(0, r);
  }
}

}  // namespace mcc::ir
