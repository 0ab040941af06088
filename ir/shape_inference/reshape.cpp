// Shape rules of ops that rearrange a tensor without reading its values: Reshape (0 and -1
// entries, allowzero), Flatten, Transpose, Concat, Squeeze/Unsqueeze (axes attribute before
// opset 13, input from 13), Expand and Tile (shape and repeats must be constants).
#include <vector>

#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {
namespace {

void reshape(const NodeShapes& c) {
  const Node& n = c.node;
  auto x = c.dims(0);
  if (!x) return;
  auto s = n.since_version >= 5 ? const_ints(n.input(1)) : std::optional<Dims>(n.attr_ints("shape"));
  if (!s) return;
  Dims o = *s;
  const bool allowzero = n.attr_int("allowzero", 0) != 0;
  int64_t known = 1, infer_at = -1;
  const int64_t total = checked_numel(*x);
  for (size_t i = 0; i < o.size(); ++i) {
    if (o[i] == 0 && !allowzero) {
      if (i >= x->size()) return;
      o[i] = (*x)[i];
    }
    if (o[i] == -1) {
      if (infer_at >= 0) return;
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (o[i] < 0) return;
    known *= o[i];
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known) return;
    o[static_cast<size_t>(infer_at)] = total / known;
  } else if (known != total) {
    return;
  }
  c.out(0, c.dt0(), o);
}

void flatten(const NodeShapes& c) {
  auto x = c.dims(0);
  if (!x) return;
  const int64_t r = static_cast<int64_t>(x->size());
  int64_t a = c.node.attr_int("axis", 1);
  if (a < 0) a += r;
  if (a < 0 || a > r) return;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < a ? outer : inner) *= (*x)[static_cast<size_t>(i)];
  c.out(0, c.dt0(), Dims{outer, inner});
}

void transpose(const NodeShapes& c) {
  auto x = c.dims(0);
  if (!x) return;
  const int64_t r = static_cast<int64_t>(x->size());
  Dims perm = c.node.attr_ints("perm");
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r) return;
  Dims o;
  for (int64_t p : perm) {
    if (!norm_axis(p, r)) return;
    o.push_back((*x)[static_cast<size_t>(p)]);
  }
  c.out(0, c.dt0(), o);
}

void concat(const NodeShapes& c) {
  auto x = c.dims(0);
  if (!x) return;
  int64_t a = c.node.attr_int("axis", 0);
  if (!norm_axis(a, static_cast<int64_t>(x->size()))) return;
  Dims o = *x;
  o[static_cast<size_t>(a)] = 0;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    auto d = c.dims(i);
    if (!d || d->size() != x->size()) return;
    o[static_cast<size_t>(a)] += (*d)[static_cast<size_t>(a)];
  }
  c.out(0, c.dt0(), o);
}

/// Axes of Squeeze/Unsqueeze: an attribute before opset 13, an optional constant input from 13
/// (absent = empty).
std::optional<Dims> squeeze_axes(const Node& n) {
  if (n.since_version < 13) return n.attr_ints("axes");
  return n.input(1) ? const_ints(n.input(1)) : std::optional<Dims>(Dims{});
}

void unsqueeze(const NodeShapes& c) {
  auto x = c.dims(0);
  if (!x) return;
  const auto axes = squeeze_axes(c.node);
  if (!axes) return;
  const int64_t orank = static_cast<int64_t>(x->size() + axes->size());
  std::vector<bool> is_new(static_cast<size_t>(orank), false);
  for (int64_t a : *axes) {
    if (!norm_axis(a, orank)) return;
    is_new[static_cast<size_t>(a)] = true;
  }
  Dims o;
  size_t j = 0;
  for (int64_t i = 0; i < orank; ++i) o.push_back(is_new[static_cast<size_t>(i)] ? 1 : (*x)[j++]);
  if (j != x->size()) return;
  c.out(0, c.dt0(), o);
}

void squeeze(const NodeShapes& c) {
  auto x = c.dims(0);
  if (!x) return;
  const auto axes = squeeze_axes(c.node);
  if (!axes) return;
  const int64_t r = static_cast<int64_t>(x->size());
  std::vector<bool> drop(x->size(), false);
  for (int64_t a : *axes) {
    if (!norm_axis(a, r) || (*x)[static_cast<size_t>(a)] != 1) return;
    drop[static_cast<size_t>(a)] = true;
  }
  Dims o;
  for (size_t i = 0; i < x->size(); ++i)
    if (!(axes->empty() ? (*x)[i] == 1 : drop[i])) o.push_back((*x)[i]);
  c.out(0, c.dt0(), o);
}

void expand(const NodeShapes& c) {
  auto x = c.dims(0);
  if (!x) return;
  auto s = const_ints(c.node.input(1));
  if (!s) return;
  c.out(0, c.dt0(), broadcast({x, s}));
}

void tile(const NodeShapes& c) {
  auto x = c.dims(0);
  if (!x) return;
  auto rep = const_ints(c.node.input(1));
  if (!rep || rep->size() != x->size()) return;
  Dims o = *x;
  for (size_t i = 0; i < o.size(); ++i) o[i] *= (*rep)[i];
  c.out(0, c.dt0(), o);
}

constexpr NamedRule kRules[] = {
    {"Concat", concat},   {"Expand", expand},       {"Flatten", flatten}, {"Reshape", reshape},
    {"Squeeze", squeeze}, {"Tile", tile}, {"Transpose", transpose}, {"Unsqueeze", unsqueeze},
};

}  // namespace

std::span<const NamedRule> reshape_rules() { return kRules; }

}  // namespace mcc::ir::shape_rules
