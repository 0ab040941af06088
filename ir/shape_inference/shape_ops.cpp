// Shape rules of the ops that read or make shapes: Shape (with start/end), Size, ConstantOfShape
// (known only when its shape input is a constant).
#include <algorithm>

#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {
namespace {

void shape(const NodeShapes& c) {
  auto d = c.dims(0);
  if (!d) return c.out(0, DType::I64, std::nullopt);
  const int64_t r = static_cast<int64_t>(d->size());
  int64_t s = c.node.attr_int("start", 0), e = c.node.attr_int("end", r);
  s = std::clamp(s < 0 ? s + r : s, int64_t{0}, r);
  e = std::clamp(e < 0 ? e + r : e, int64_t{0}, r);
  c.out(0, DType::I64, Dims{std::max<int64_t>(0, e - s)});
}

void size(const NodeShapes& c) { c.out(0, DType::I64, Dims{}); }

void constant_of_shape(const NodeShapes& c) {
  const Tensor* v = c.node.attr_tensor("value");
  c.out(0, v ? v->dtype() : DType::F32, const_ints(c.node.input(0)));
}

constexpr NamedRule kRules[] = {
    {"ConstantOfShape", constant_of_shape}, {"Shape", shape}, {"Size", size}};

}  // namespace

std::span<const NamedRule> shape_op_rules() { return kRules; }

}  // namespace mcc::ir::shape_rules
