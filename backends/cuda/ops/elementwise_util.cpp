// Host-side helpers of the cuda elementwise/normalization/reduction ops (see elementwise_util.h).
#include "backends/cuda/ops/elementwise_util.h"

#include <algorithm>

#include "ir/errors.h"

namespace mcc::backends::cuda {

using mcc::cuda::ElemType;
using mcc::cuda::Shape8;

std::optional<ElemType> elem_type(ir::DType dt) {
  switch (dt) {
    case ir::DType::F32: return ElemType::F32;
    case ir::DType::F16: return ElemType::F16;
    case ir::DType::I32: return ElemType::I32;
    case ir::DType::I64: return ElemType::I64;
    case ir::DType::Bool: return ElemType::Bool;
    case ir::DType::U8: return ElemType::U8;
    case ir::DType::I8: return ElemType::I8;
    default: return std::nullopt;
  }
}

namespace {
bool omitted(const ir::Node& n, size_t i) { return i >= n.inputs.size() || n.inputs[i] == nullptr; }
}  // namespace

std::string check_input_type(const ir::Node& n, std::span<const ir::DType> dts, size_t i,
                             std::initializer_list<ir::DType> allowed) {
  if (i >= dts.size() || omitted(n, i)) return "";
  const ir::DType dt = dts[i];
  if (dt == ir::DType::Undefined) return "input " + std::to_string(i) + " has an unknown dtype";
  if (std::find(allowed.begin(), allowed.end(), dt) == allowed.end())
    return "input " + std::to_string(i) + " is " + ir::dtype_name(dt);
  return "";
}

std::string check_same_types(const ir::Node& n, std::span<const ir::DType> dts, size_t first, size_t end) {
  end = std::min(end, dts.size());
  for (size_t i = first + 1; i < end; ++i) {
    if (omitted(n, i)) continue;
    if (dts[i] == ir::DType::Undefined) return "input " + std::to_string(i) + " has an unknown dtype";
    if (dts[i] != dts[first])
      return "input " + std::to_string(i) + " is " + ir::dtype_name(dts[i]) + " but input " +
             std::to_string(first) + " is " + ir::dtype_name(dts[first]);
  }
  return "";
}

bool node_wants_output(const ir::Node& n, size_t i) {
  return i < n.outputs.size() && n.outputs[i] != nullptr && !n.outputs[i]->name.empty();
}

namespace {

std::vector<int64_t> broadcast_dims(const ir::Node& n, const std::vector<std::vector<int64_t>>& in_dims) {
  size_t rank = 0;
  for (const auto& d : in_dims) rank = std::max(rank, d.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& d : in_dims) {
    for (size_t k = 0; k < d.size(); ++k) {
      int64_t& o = out[rank - d.size() + k];
      const int64_t v = d[k];
      if (v == o || v == 1) continue;
      if (o != 1) throw ModelError(n.describe() + ": input shapes do not broadcast");
      o = v;
    }
  }
  return out;
}

/// Row-major strides of `in` aligned to `out`'s rank, 0 on broadcast dims.
std::vector<int64_t> aligned_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t st = 1;
  for (size_t k = in.size(); k-- > 0;) {
    const size_t o = out.size() - in.size() + k;
    s[o] = (in[k] == 1 && out[o] != 1) ? 0 : st;
    st *= in[k];
  }
  return s;
}

/// Drops size-1 output dims and merges adjacent dims that every input walks contiguously.
std::vector<Shape8> collapse(const ir::Node& n, const std::vector<int64_t>& out,
                             const std::vector<std::vector<int64_t>>& strides) {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(strides.size());
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < strides.size() && merge; ++k) merge = st[k].back() == strides[k][d] * out[d];
    if (merge) {
      dims.back() *= out[d];
      for (size_t k = 0; k < strides.size(); ++k) st[k].back() = strides[k][d];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < strides.size(); ++k) st[k].push_back(strides[k][d]);
    }
  }
  if (dims.size() > static_cast<size_t>(mcc::cuda::kMaxRank))
    throw BackendError(n.describe() + ": broadcast needs more than 8 dims after collapsing");
  std::vector<Shape8> res(strides.size());
  for (size_t k = 0; k < strides.size(); ++k) {
    res[k].rank = static_cast<int>(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      res[k].dims[d] = dims[d];
      res[k].strides[d] = st[k][d];
    }
  }
  return res;
}

}  // namespace

Broadcast broadcast(const ir::Node& n, const std::vector<std::vector<int64_t>>& in_dims) {
  Broadcast b;
  b.out = broadcast_dims(n, in_dims);
  b.numel = 1;
  for (int64_t d : b.out) b.numel *= d;
  std::vector<std::vector<int64_t>> strides;
  for (const auto& d : in_dims) strides.push_back(aligned_strides(d, b.out));
  b.in = collapse(n, b.out, strides);
  return b;
}

Shape8 broadcast_to(const ir::Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  return collapse(n, out, {aligned_strides(in, out)}).at(0);
}

}  // namespace mcc::backends::cuda
