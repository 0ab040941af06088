// Concatenation, stacking and slicing along one axis for any fixed-size dtype or strings; shared
// by Loop/Scan (scan inputs and outputs) and the sequence ops (SplitToSequence,
// ConcatFromSequence). Copies whole contiguous runs with memcpy.
#include <cstring>
#include <string>

#include "backends/cpu/kernels/control_kernels.h"
#include "backends/cpu/kernels/kernel_util.h"

namespace mcc::backends::cpu {
namespace {

std::string fmt_dims(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

size_t elem_bytes(const ir::Node& n, ir::DType dt) {
  const int bits = ir::info(dt).bits;
  if (dt != ir::DType::String && (bits <= 0 || bits % 8 != 0))
    throw UnsupportedError(n.describe() + ": " + n.op_type + ": dtype " + ir::dtype_name(dt) +
                           " cannot be sliced or concatenated by the cpu backend");
  return static_cast<size_t>(bits / 8);
}

// Copies `count` elements from src[so] to dst[dof] (strings or raw bytes).
void copy_elems(const ir::Tensor& src, int64_t so, ir::Tensor& dst, int64_t dof, int64_t count, size_t eb) {
  if (count <= 0) return;
  if (src.dtype() == ir::DType::String) {
    const auto& s = src.strings();
    auto& d = dst.mutable_strings();
    for (int64_t i = 0; i < count; ++i) d[dof + i] = s[so + i];
    return;
  }
  std::memcpy(dst.mutable_raw() + dof * eb, src.raw() + so * eb, static_cast<size_t>(count) * eb);
}

}  // namespace

ir::Tensor concat_tensors(const ir::Node& n, const std::vector<ir::Tensor>& parts, int64_t axis) {
  if (parts.empty()) throw ModelError(n.describe() + ": nothing to concatenate");
  const ir::Tensor& first = parts[0];
  const int64_t rank = static_cast<int64_t>(first.rank());
  if (rank == 0) throw ModelError(n.describe() + ": cannot concatenate scalars");
  axis = normalize_axis(n, axis, rank);
  std::vector<int64_t> out = first.dims();
  out[axis] = 0;
  for (const ir::Tensor& p : parts) {
    if (p.dtype() != first.dtype())
      throw ModelError(n.describe() + ": concatenated tensors have dtypes " + ir::dtype_name(first.dtype()) +
                       " and " + ir::dtype_name(p.dtype()));
    bool ok = static_cast<int64_t>(p.rank()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || p.dims()[d] == first.dims()[d];
    if (!ok)
      throw ModelError(n.describe() + ": shapes " + fmt_dims(first.dims()) + " and " + fmt_dims(p.dims()) +
                       " cannot be concatenated on axis " + std::to_string(axis));
    out[axis] += p.dims()[axis];
  }
  const size_t eb = elem_bytes(n, first.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out[d];
  ir::Tensor res = ir::Tensor::allocate(first.dtype(), out);
  const int64_t row = out[axis] * inner;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off = o * row;
    for (const ir::Tensor& p : parts) {
      const int64_t chunk = p.dims()[axis] * inner;
      copy_elems(p, o * chunk, res, off, chunk, eb);
      off += chunk;
    }
  }
  return res;
}

ir::Tensor stack_tensors(const ir::Node& n, const std::vector<ir::Tensor>& parts, int64_t axis) {
  if (parts.empty()) throw ModelError(n.describe() + ": nothing to stack");
  const int64_t rank = static_cast<int64_t>(parts[0].rank());
  if (axis < 0) axis += rank + 1;
  if (axis < 0 || axis > rank)
    throw ModelError(n.describe() + ": stacking axis is out of range for rank " + std::to_string(rank));
  std::vector<ir::Tensor> views;
  views.reserve(parts.size());
  for (const ir::Tensor& p : parts) {
    if (p.dims() != parts[0].dims())
      throw ModelError(n.describe() + ": stacked tensors have shapes " + fmt_dims(parts[0].dims()) + " and " +
                       fmt_dims(p.dims()));
    std::vector<int64_t> d = p.dims();
    d.insert(d.begin() + axis, 1);
    views.push_back(p.reshaped(std::move(d)));
  }
  return concat_tensors(n, views, axis);
}

ir::Tensor slice_axis(const ir::Node& n, const ir::Tensor& t, int64_t axis, int64_t begin, int64_t len,
                      bool keep_axis) {
  const int64_t rank = static_cast<int64_t>(t.rank());
  axis = normalize_axis(n, axis, rank);
  const auto& dims = t.dims();
  if (begin < 0 || len < 0 || begin + len > dims[axis])
    throw ModelError(n.describe() + ": slice [" + std::to_string(begin) + ", " + std::to_string(begin + len) +
                     ") is outside axis " + std::to_string(axis) + " of " + fmt_dims(dims));
  std::vector<int64_t> out = dims;
  out[axis] = len;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= dims[d];
  const size_t eb = elem_bytes(n, t.dtype());
  ir::Tensor res = ir::Tensor::allocate(t.dtype(), out);
  for (int64_t o = 0; o < outer; ++o)
    copy_elems(t, (o * dims[axis] + begin) * inner, res, o * len * inner, len * inner, eb);
  if (!keep_axis) {
    if (len != 1) throw InternalError(n.describe() + ": dropping an axis needs a slice of length 1");
    out.erase(out.begin() + axis);
    return res.reshaped(std::move(out));
  }
  return res;
}

}  // namespace mcc::backends::cpu
