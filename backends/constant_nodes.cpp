// See constant_nodes.h.
#include "backends/constant_nodes.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "ir/op_facts.h"

namespace mcc::backends {
namespace {

size_t bytes_for(ir::DType dt, const std::vector<int64_t>& dims) {
  const int bits = ir::info(dt).bits;
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(std::max<int64_t>(d, 0));
  const double b = n * std::max(bits, 8) / 8.0;
  return b > 1e18 ? static_cast<size_t>(1e18) : static_cast<size_t>(b);
}

std::vector<int64_t> ints_of(const ir::Tensor& t) {
  std::vector<int64_t> v;
  if (t.dtype() == ir::DType::I64) v.assign(t.data<int64_t>().begin(), t.data<int64_t>().end());
  else if (t.dtype() == ir::DType::I32) for (int32_t x : t.data<int32_t>()) v.push_back(x);
  return v;
}

double first_as_double(const ir::Tensor& t) {
  double v = 0;
  ir::dispatch<MCC_NUMERIC_DTYPES>(t.dtype(), "Range", [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = static_cast<double>(static_cast<float>(t.data<T>()[0]));
  });
  return v;
}

}  // namespace

bool computable_ahead(const ir::Node& n) {
  static constexpr std::string_view kNever[] = {"DequantizeLinear", "If", "Loop", "Scan"};
  if (!(n.domain.empty() || n.domain == "ai.onnx")) return false;
  if (std::find(std::begin(kNever), std::end(kNever), n.op_type) != std::end(kNever)) return false;
  return !ir::draws_random_values(n.op_type) && n.subgraphs().empty();
}

size_t predicted_output_bytes(const ir::Node& n, const std::function<const ir::Tensor*(size_t)>& constant_input) {
  auto c = [&](size_t i) { return i < n.inputs.size() && n.inputs[i] ? constant_input(i) : nullptr; };
  if (n.op_type == "ConstantOfShape" && c(0)) {
    const ir::Tensor* v = n.attr_tensor("value");
    return bytes_for(v ? v->dtype() : ir::DType::F32, ints_of(*c(0)));
  }
  if ((n.op_type == "Expand" || n.op_type == "Tile") && c(0) && c(1)) {
    std::vector<int64_t> a = c(0)->dims(), b = ints_of(*c(1));
    if (n.op_type == "Tile") {
      for (size_t i = 0; i < a.size() && i < b.size(); ++i) a[i] *= b[i];
      return bytes_for(c(0)->dtype(), a);
    }
    const size_t r = std::max(a.size(), b.size());
    std::vector<int64_t> o(r, 1);
    for (size_t i = 0; i < r; ++i) {
      const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
      o[r - 1 - i] = std::max(x, y);
    }
    return bytes_for(c(0)->dtype(), o);
  }
  if (n.op_type == "Range" && c(0) && c(1) && c(2) && c(0)->numel() == 1 && c(1)->numel() == 1 && c(2)->numel() == 1) {
    const double d = first_as_double(*c(2));
    if (d == 0) return 0;
    const double cnt = std::max(0.0, std::ceil((first_as_double(*c(1)) - first_as_double(*c(0))) / d));
    return bytes_for(c(0)->dtype(), {static_cast<int64_t>(std::min(cnt, 1e15))});
  }
  size_t total = 0;
  for (const ir::Value* o : n.outputs) {
    if (!o) continue;
    auto d = o->shape.static_dims();
    if (!d || o->dtype == ir::DType::Undefined) return 0;
    total += bytes_for(o->dtype, *d);
  }
  return total;
}

}  // namespace mcc::backends
