// fold_shapes: replace Shape, Size and Gather-on-Shape by constants where static shapes are known,
// so the shape arithmetic downstream (Gather/Concat/Unsqueeze/Reshape inputs) becomes constant
// and fold_constants evaluates it.
//
// Before:  s = Shape(x)  d = Gather(s, 1)  t = Concat(Unsqueeze(d), [-1])  y = Reshape(x, t)
//          (x: f32[1, 64, 7, 7], known statically)
// After:   y = Reshape(x, t)   (s, d, t: initializers, once fold_constants has run)
// Formula: Shape(x)[start:end] = dims(x)[start:end]; Size(x) = prod(dims(x));
//          Gather(Shape(x), i) = dims(x)[i] (only the gathered dims must be known).
// Static shapes come from a minimal propagation (ir/shape_inference) seeded by graph inputs with
// fully static declared shapes and initializers; a symbolic or unknown dim anywhere on the way
// means "unknown" and nothing is folded.
// Does not apply when: a needed dim is unknown or symbolic; Gather's indices are not a constant
//   or its axis is not 0.
// Numerical notes: exact (int64).
#include <algorithm>
#include <string>

#include "ir/shape_inference/shape_inference.h"
#include "transforms/fold/fold.h"

namespace mcc::transforms::fold {
namespace {

// The dims a Shape node reports, one optional per position (nullopt: unknown or symbolic).
std::optional<std::vector<std::optional<int64_t>>> shape_dims(const ir::Node& shape_node, const ir::ShapeInference& shapes) {
  const ir::Value* x = shape_node.input(0);
  if (!x) return std::nullopt;
  std::vector<std::optional<int64_t>> dims;
  if (auto d = shapes.of(x).dims) {
    for (int64_t v : *d) dims.emplace_back(v);
  } else if (x->shape.rank_known()) {
    for (const auto& d : *x->shape.dims) dims.push_back(d.value);  // partly static declared shape
  } else {
    return std::nullopt;
  }
  const int64_t r = static_cast<int64_t>(dims.size());
  int64_t s = shape_node.attr_int("start", 0), e = shape_node.attr_int("end", r);
  s = std::clamp(s < 0 ? s + r : s, int64_t{0}, r);
  e = std::clamp(e < 0 ? e + r : e, int64_t{0}, r);
  if (e < s) e = s;
  return std::vector<std::optional<int64_t>>(dims.begin() + s, dims.begin() + e);
}

bool try_fold(ir::Graph& g, ir::Node& n, RewriteLog& log, const ir::ShapeInference& shapes) {
  if (n.outputs.empty() || !n.outputs[0]) return false;
  const std::string name = n.name.empty() ? n.outputs[0]->name : n.name;
  if (n.is("Shape")) {
    auto dims = shape_dims(n, shapes);
    if (!dims) return false;
    std::vector<int64_t> v;
    for (const auto& d : *dims) { if (!d) return false; v.push_back(*d); }
    replace_with_constants(g, n, {ir::Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v)});
    log.add("shapes_folded", name);
    return true;
  }
  if (n.is("Size")) {
    auto d = shapes.of(n.input(0)).dims;
    if (!d) return false;
    replace_with_constants(g, n, {ir::Tensor::scalar<int64_t>(ir::checked_numel(*d))});
    log.add("shapes_folded", name);
    return true;
  }
  if (n.is("Gather")) {
    ir::Node* sn = producer_in(g, n.input(0), {"Shape"});
    const ir::Value* idx = n.input(1);
    if (!sn || !is_constant(idx) || n.attr_int("axis", 0) != 0) return false;
    auto dims = shape_dims(*sn, shapes);
    if (!dims) return false;
    const ir::Tensor& it = *idx->initializer;
    std::vector<int64_t> ids;
    if (it.dtype() == ir::DType::I64) ids.assign(it.data<int64_t>().begin(), it.data<int64_t>().end());
    else if (it.dtype() == ir::DType::I32) for (int32_t i : it.data<int32_t>()) ids.push_back(i);
    else return false;
    const int64_t r = static_cast<int64_t>(dims->size());
    std::vector<int64_t> v;
    for (int64_t i : ids) {
      if (i < 0) i += r;
      if (i < 0 || i >= r || !(*dims)[static_cast<size_t>(i)]) return false;
      v.push_back(*(*dims)[static_cast<size_t>(i)]);
    }
    replace_with_constants(g, n, {ir::Tensor::from_vector<int64_t>(it.dims(), v)});
    log.add("shapes_folded", name);
    return true;
  }
  return false;
}

}  // namespace

int64_t fold_shapes(ir::Model& m, const FoldConfig& cfg, RewriteLog& log) {
  const ir::ShapeInference shapes(m);
  return RewriteDriver()
      .on({"Shape", "Size", "Gather"},
          [&](ir::Graph& g, ir::Node& n, RewriteLog& l) { return try_fold(g, n, l, shapes); })
      .recurse_subgraphs(cfg.subgraphs)
      .run(*m.graph, log);
}

}  // namespace mcc::transforms::fold
