// Shape rules of reductions: the Reduce* ops (axes from the attribute, or from a constant input
// from opset 13/18; empty axes = all, or nothing with noop_with_empty_axes) and ArgMax/ArgMin
// (one `axis` attribute, int64 output). keepdims keeps reduced axes as 1.
#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {
namespace {

void reduce_axes(const NodeShapes& c, bool arg) {
  const Node& n = c.node;
  auto x = c.dims(0);
  if (!x) return;
  const bool keep = n.attr_int("keepdims", 1) != 0;
  std::optional<Dims> axes;
  if (arg) axes = Dims{n.attr_int("axis", 0)};
  else if (n.has_attr("axes")) axes = n.attr_ints("axes");
  else if (n.input(1)) axes = const_ints(n.input(1));
  else axes = Dims{};
  if (!axes) return;
  if (axes->empty() && n.attr_int("noop_with_empty_axes", 0)) return c.out(0, c.dt0(), x);
  const int64_t r = static_cast<int64_t>(x->size());
  std::vector<bool> red(x->size(), axes->empty());
  for (int64_t a : *axes) {
    if (!norm_axis(a, r)) return;
    red[static_cast<size_t>(a)] = true;
  }
  Dims o;
  for (size_t i = 0; i < x->size(); ++i) {
    if (!red[i]) o.push_back((*x)[i]);
    else if (keep) o.push_back(1);
  }
  c.out(0, arg ? DType::I64 : c.dt0(), o);
}

void arg_reduce(const NodeShapes& c) { reduce_axes(c, true); }

constexpr NamedRule kRules[] = {{"ArgMax", arg_reduce}, {"ArgMin", arg_reduce}};

}  // namespace

void reduce(const NodeShapes& c) { reduce_axes(c, false); }

std::span<const NamedRule> reduce_rules() { return kRules; }

}  // namespace mcc::ir::shape_rules
