// Shape rules of elementwise ops: same-shape and broadcasting ops (selected by their op facts),
// and the elementwise ops with a twist: Dropout (bool mask output), Where (type of X), Cast and
// CastLike (type from an attribute or another input).
#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {

void same_shape(const NodeShapes& c, bool bool_out) {
  c.out(0, bool_out ? DType::Bool : c.dt0(), c.dims(0));
}

void broadcast_inputs(const NodeShapes& c, bool bool_out) {
  std::vector<std::optional<Dims>> shapes;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) shapes.push_back(c.dims(i));
  c.out(0, bool_out ? DType::Bool : c.dt0(), broadcast(shapes));
}

namespace {

void dropout(const NodeShapes& c) {
  same_shape(c, false);
  // The mask is bool from opset 10; before, it had the data's type.
  if (c.node.outputs.size() > 1) c.out(1, c.node.since_version >= 10 ? DType::Bool : c.dt0(), c.dims(0));
}

void where(const NodeShapes& c) {
  std::vector<std::optional<Dims>> shapes;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) shapes.push_back(c.dims(i));
  c.out(0, c.in(1).dtype, broadcast(shapes));
}

void cast(const NodeShapes& c) {
  // Cast-1 names the target type as a string ("INT32"); its element type is then left unknown.
  const Attribute* to = c.node.attr("to");
  const bool named = to && to->kind == AttrKind::String;
  c.out(0, named ? DType::Undefined : static_cast<DType>(c.node.attr_int("to", 0)), c.dims(0));
}

void cast_like(const NodeShapes& c) { c.out(0, c.in(1).dtype, c.dims(0)); }

constexpr NamedRule kRules[] = {
    {"Cast", cast}, {"CastLike", cast_like}, {"Dropout", dropout}, {"Where", where}};

}  // namespace

std::span<const NamedRule> elementwise_rules() { return kRules; }

}  // namespace mcc::ir::shape_rules
