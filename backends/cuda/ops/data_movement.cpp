// The data-movement family's shared helpers (see data_movement.h) and register_data_movement,
// which registers every file of the family.
#include "backends/cuda/ops/data_movement.h"

#include <cstring>

#include "backends/cuda/kernels/copy_strided.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {

int elem_width(ir::DType dt) {
  if (dt == ir::DType::String || dt == ir::DType::Undefined) return 0;
  const int bits = ir::info(dt).bits;
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? bits / 8 : 0;
}

void device_strided_copy(const ir::Node& n, const ir::Tensor& x, int64_t offset,
                         std::vector<int64_t> out_dims, std::vector<int64_t> strides, ir::Tensor& y) {
  if (y.numel() == 0) return;
  // Drop unit dims, then merge neighbours whose strides make them one run of x.
  std::vector<int64_t> dims, st;
  for (size_t i = 0; i < out_dims.size(); ++i) {
    if (out_dims[i] == 1) continue;
    if (!dims.empty() && st.back() == strides[i] * out_dims[i]) {
      dims.back() *= out_dims[i];
      st.back() = strides[i];
    } else {
      dims.push_back(out_dims[i]);
      st.push_back(strides[i]);
    }
  }
  if (dims.size() > static_cast<size_t>(::mcc::cuda::kMaxCopyRank))
    throw ModelError(n.describe() + ": the cuda copy handles at most 8 non-mergeable dims, got " +
                     std::to_string(dims.size()));
  ::mcc::cuda::copy_strided(x.device_data(), offset, y.mutable_device_data(), static_cast<int>(dims.size()),
                            dims.data(), st.data(), elem_width(x.dtype()));
}

NodeCheck rank_at_most(int index, size_t max_rank) {
  return [index, max_rank](const ir::Node& n, std::span<const ir::DType>) -> std::string {
    if (static_cast<size_t>(index) >= n.inputs.size() || !n.inputs[index]) return {};
    const ir::Shape& s = n.inputs[index]->shape;
    if (s.rank_known() && s.rank() > max_rank)
      return "input " + std::to_string(index) + " has rank " + std::to_string(s.rank()) + " (at most " +
             std::to_string(max_rank) + ")";
    return {};
  };
}

uint64_t element_bits(const ir::Tensor& host) {
  uint64_t bits = 0;
  std::memcpy(&bits, host.raw(), static_cast<size_t>(elem_width(host.dtype())));
  return bits;
}

void register_data_movement(OpTable& t) {
  register_shape_ops(t);
  register_concat_split(t);
  register_slice_pad(t);
  register_gather(t);
  register_resize(t);
}

}  // namespace mcc::backends::cuda
