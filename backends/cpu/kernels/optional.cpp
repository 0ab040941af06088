// Optionals: an optional holding a value is that value (tensor or sequence); an empty optional is
// RValue::none().
//   Optional           opsets 15-28: wraps its input, or makes an empty optional when the input
//                      is omitted (the `type` attribute then only documents the element type).
//   OptionalHasElement opsets 15-28: bool scalar; since opset 18 the input may be a plain tensor
//                      or sequence, or omitted (false).
//   OptionalGetElement opsets 15-28: the held value; ModelError on an empty optional.
// dtypes: any (values pass through without a copy).
#include "backends/cpu/kernels/control_kernels.h"

namespace mcc::backends::cpu {
namespace {

void optional_make(KernelContext& ctx) {
  const RValue* v = ctx.in_value(0);
  ctx.set_output_value(0, v ? *v : RValue::none());
}

void optional_has_element(KernelContext& ctx) {
  ctx.set_output(0, bool_scalar(ctx.has_input(0)));
}

void optional_get_element(KernelContext& ctx) {
  if (!ctx.has_input(0))
    throw ModelError(ctx.node().describe() + ": the optional input is empty");
  ctx.set_output_value(0, *ctx.in_value(0));
}

}  // namespace

void register_optional(KernelRegistry& r) {
  r.add("Optional", 15, 0, stateless(optional_make));
  r.add("OptionalHasElement", 15, 0, stateless(optional_has_element));
  r.add("OptionalGetElement", 15, 0, stateless(optional_get_element));
}

}  // namespace mcc::backends::cpu
