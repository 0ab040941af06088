// Shape rules of com.microsoft (ONNX Runtime contrib) ops that mcc runs: MatMulNBits (A's dims
// with the last replaced by attribute N, A's element type). An attribute of the wrong kind or a
// last dim of A other than attribute K leaves the output unknown for the kernel to report.
#include <optional>
#include <string_view>
#include <variant>

#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {
namespace {

/// An int attribute, or nullopt when it is absent or of another kind.
std::optional<int64_t> int_attr(const Node& n, std::string_view name) {
  const Attribute* a = n.attr(name);
  if (!a || a->kind != AttrKind::Int) return std::nullopt;
  return std::get<int64_t>(a->value);
}

void matmul_nbits(const NodeShapes& c) {
  const DType dt = c.dt0();
  const auto k = int_attr(c.node, "K"), n = int_attr(c.node, "N");
  auto a = c.dims(0);
  if (!n || *n < 1 || !k || !a || a->empty() || a->back() != *k) return c.out(0, dt, std::nullopt);
  Dims o = *a;
  o.back() = *n;
  c.out(0, dt, o);
}

constexpr NamedRule kRules[] = {{"MatMulNBits", matmul_nbits}};

}  // namespace

std::span<const NamedRule> microsoft_rules() { return kRules; }

}  // namespace mcc::ir::shape_rules
