// Shape rules of Resize and Upsample: output dims from constant `sizes` (Resize 11+) or
// floor(dim * scale) from constant `scales` (an input, or Upsample-7's attribute). An `axes`
// attribute (Resize 18+) is not modelled.
#include <cmath>

#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {
namespace {

/// The scales of a Resize/Upsample node; nullopt when they are not constant.
std::optional<std::vector<double>> scales_of(const Node& n) {
  const bool upsample = n.op_type == "Upsample";
  const Value* sv = upsample ? (n.since_version >= 9 ? n.input(1) : nullptr)
                             : (n.since_version >= 11 ? n.input(2) : n.input(1));
  if (sv) return const_floats(sv);
  if (!upsample) return std::nullopt;
  const auto f = n.attr_floats("scales");
  return std::vector<double>(f.begin(), f.end());
}

void resize(const NodeShapes& c) {
  const Node& n = c.node;
  auto x = c.dims(0);
  if (!x) return;
  const int64_t r = static_cast<int64_t>(x->size());
  if (n.since_version >= 11 && n.op_type == "Resize" && n.input(3)) {
    auto sizes = const_ints(n.input(3));
    if (sizes && static_cast<int64_t>(sizes->size()) == r && !n.has_attr("axes")) c.out(0, c.dt0(), sizes);
    return;
  }
  const auto scales = scales_of(n);
  if (!scales || static_cast<int64_t>(scales->size()) != r || n.has_attr("axes")) return;
  Dims o = *x;
  for (size_t i = 0; i < o.size(); ++i)
    o[i] = static_cast<int64_t>(std::floor(static_cast<double>(o[i]) * (*scales)[i]));
  c.out(0, c.dt0(), o);
}

constexpr NamedRule kRules[] = {{"Resize", resize}, {"Upsample", resize}};

}  // namespace

std::span<const NamedRule> resize_rules() { return kRules; }

}  // namespace mcc::ir::shape_rules
