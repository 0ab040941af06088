// Helpers shared by the shape rules (see rules.h): constant operands and broadcasting.
#include <algorithm>

#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {
namespace {

/// A value whose content is known: an initializer that is not also a graph input (an input may
/// be fed at run time, overriding its initializer).
bool is_constant(const Value* v) { return v && v->initializer.has_value() && !v->is_graph_input; }

}  // namespace

std::optional<Dims> const_ints(const Value* v) {
  if (!is_constant(v)) return std::nullopt;
  const Tensor& t = *v->initializer;
  Dims out;
  if (t.dtype() == DType::I64) for (int64_t x : t.data<int64_t>()) out.push_back(x);
  else if (t.dtype() == DType::I32) for (int32_t x : t.data<int32_t>()) out.push_back(x);
  else return std::nullopt;
  return out;
}

std::optional<std::vector<double>> const_floats(const Value* v) {
  if (!is_constant(v)) return std::nullopt;
  const Tensor& t = *v->initializer;
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

}  // namespace mcc::ir::shape_rules
