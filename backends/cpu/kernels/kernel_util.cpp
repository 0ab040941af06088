// Shared cpu kernel helpers (see kernel_util.h).
#include "backends/cpu/kernels/kernel_util.h"

#include <algorithm>

namespace mcc::backends::cpu {

std::vector<int64_t> broadcast_shapes(const ir::Node& n, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      auto fmt = [](const std::vector<int64_t>& v) {
        std::string s = "[";
        for (size_t j = 0; j < v.size(); ++j) s += (j ? "," : "") + std::to_string(v[j]);
        return s + "]";
      };
      throw ModelError(n.describe() + ": shapes " + fmt(a) + " and " + fmt(b) + " cannot be broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> s(out.size(), 0);
  const auto cs = contiguous_strides(in);
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : cs[i];
  return s;
}

int64_t normalize_axis(const ir::Node& n, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    throw ModelError(n.describe() + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> read_int_tensor(const ir::Node& n, const ir::Tensor& t, const char* what) {
  std::vector<int64_t> out;
  if (t.dtype() == ir::DType::I64) { auto d = t.data<int64_t>(); out.assign(d.begin(), d.end()); }
  else if (t.dtype() == ir::DType::I32) { auto d = t.data<int32_t>(); out.assign(d.begin(), d.end()); }
  else throw ModelError(n.describe() + ": " + what + " must be int32 or int64, got " + ir::dtype_name(t.dtype()));
  return out;
}

std::vector<float> read_float_tensor(const ir::Node& n, const ir::Tensor& t, const char* what) {
  std::vector<float> out;
  ir::dispatch<MCC_FLOAT_DTYPES>(t.dtype(), n.describe() + ": " + what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T v : t.data<T>()) out.push_back(static_cast<float>(v));
  });
  return out;
}

bool is_constant_value(const ir::Value* v) {
  if (!v || v->is_graph_input) return false;
  if (v->initializer) return true;
  return v->producer && v->producer->is("Constant") && v->producer->inputs.empty();
}

}  // namespace mcc::backends::cpu
