// Gather on the cuda backend: data of any fixed-width type (1, 2, 4 or 8 bytes), int32 or int64
// indices read on the device (so an index computed by a device kernel needs no copy back), any
// axis (negative counts from the end), negative indices count from the end.
// An out-of-range index fails the run naming the node, as on the cpu (reported through the
// device error word, runtime/device_errors.h).
// Declined: strings, sub-byte types, indices of other types.
#include <string>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cuda/kernels/gather.h"
#include "backends/cuda/ops/data_movement.h"
#include "backends/cuda/runtime/device_errors.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

using ir::Tensor;

std::string check_indices(const ir::Node& n, std::span<const ir::DType> dts) {
  const ir::DType dt = dts.size() > 1 ? dts[1] : ir::DType::Undefined;
  if (n.inputs.size() < 2 || !n.inputs[1]) return "Gather needs indices";
  if (dt != ir::DType::I32 && dt != ir::DType::I64) return "indices are " + ir::dtype_name(dt);
  return {};
}

int64_t prod(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) p *= d[i];
  return p;
}

Kernel make_gather(const ir::Node& n) {
  const int64_t axis_attr = n.attr_int("axis", 0);
  const int32_t site = ::mcc::cuda::register_error_site(n.describe() + ": Gather index out of range of the data's axis");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const Tensor& idx = ctx.in(1);
    const auto r = static_cast<int64_t>(x.rank());
    if (r == 0) throw ModelError(ctx.node().describe() + ": Gather data must have rank >= 1");
    const auto axis = static_cast<size_t>(cpu::normalize_axis(ctx.node(), axis_attr, r));
    std::vector<int64_t> out(x.dims().begin(), x.dims().begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), idx.dims().begin(), idx.dims().end());
    out.insert(out.end(), x.dims().begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.dims().end());
    const int64_t axis_len = x.dims()[axis];
    Tensor& y = ctx.alloc_output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    if (axis_len == 0) throw ModelError(ctx.node().describe() + ": Gather indexes an empty axis");
    ::mcc::cuda::gather(x.device_data(), idx.device_data(), idx.dtype() == ir::DType::I64, y.mutable_device_data(),
                        prod(x.dims(), 0, axis), axis_len, idx.numel(), prod(x.dims(), axis + 1, x.dims().size()),
                        elem_width(x.dtype()), ::mcc::cuda::device_error_word(), site);
  };
}

}  // namespace

void register_gather(OpTable& t) {
  t.add("Gather", 1, 0, make_gather, all_of({any_fixed_width({0}), check_indices}));
}

}  // namespace mcc::backends::cuda
