// Shape and constant ops on the cuda backend.
//   Views (no copy; the output shares the input's device buffer): Reshape (shape attribute before
//   5, host shape input from 5; allowzero), Flatten, Squeeze / Unsqueeze (axes attribute before
//   13, host input from 13), Identity (tensors). Their shape logic only reads dims and host
//   inputs, so they run the cpu kernel itself on the device tensor: one set of shape rules and
//   error messages for both backends.
//   Shape (start/end from 15) and Size: a small int64 tensor built on the host and uploaded.
//   Constant (value, value_float(s), value_int(s)): uploaded on the first run and kept by the
//   kernel. ConstantOfShape: the shape is a host input; the value is filled on the device.
// dtypes: every fixed-width type of 1, 2, 4 or 8 bytes.
// Declined: strings (Constant value_string(s), string tensors), sparse_value, sub-byte types,
//   sequences and optionals through Identity.
#include <memory>
#include <mutex>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cuda/kernels/copy_strided.h"
#include "backends/cuda/ops/data_movement.h"
#include "backends/kernel_shapes.h"
#include "backends/executor.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

using ir::DType;
using ir::Tensor;

/// The cpu backend's kernel for a view op: it reads only dims and host inputs and sets its output
/// to x.reshaped(...), which keeps x's device buffer.
Kernel make_view(const ir::Node& n) { return backends::cpu_backend().create_kernel(n); }

Kernel make_shape(const ir::Node& n) {
  const int64_t start_attr = n.attr_int("start", 0);
  const bool has_end = n.has_attr("end");
  const int64_t end_attr = n.attr_int("end", 0);
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const auto [s, e] = shape_range(static_cast<int64_t>(x.rank()), start_attr, has_end, end_attr);
    std::vector<int64_t> dims(x.dims().begin() + s, x.dims().begin() + e);
    const auto len = static_cast<int64_t>(dims.size());
    ctx.set_output(0, ctx.backend().upload(Tensor::from_vector<int64_t>({len}, dims)));
  };
}

void run_size(KernelContext& ctx) {
  ctx.set_output(0, ctx.backend().upload(Tensor::scalar<int64_t>(ctx.in(0).numel())));
}

/// The constant's host value, or an empty tensor for the forms the check declines.
Tensor constant_value(const ir::Node& n) {
  if (const Tensor* v = n.attr_tensor("value")) return *v;
  if (n.has_attr("value_float")) return Tensor::scalar<float>(n.attr_float("value_float", 0));
  if (n.has_attr("value_int")) return Tensor::scalar<int64_t>(n.attr_int("value_int", 0));
  if (n.has_attr("value_floats")) {
    const auto v = n.attr_floats("value_floats");
    return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  }
  if (n.has_attr("value_ints")) {
    const auto v = n.attr_ints("value_ints");
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  return {};
}

std::string check_constant(const ir::Node& n, std::span<const ir::DType>) {
  int forms = 0;
  for (const char* a : {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                        "value_strings", "sparse_value"})
    forms += n.has_attr(a) ? 1 : 0;
  if (forms != 1) return "Constant needs exactly one value attribute";
  if (n.has_attr("sparse_value")) return "sparse_value";
  if (n.has_attr("value_string") || n.has_attr("value_strings")) return "string constant";
  const Tensor t = constant_value(n);
  if (elem_width(t.dtype()) == 0) return "value is " + ir::dtype_name(t.dtype());
  return {};
}

Kernel make_constant(const ir::Node& n) {
  struct Cache {
    std::once_flag once;
    Tensor device;
  };
  auto cache = std::make_shared<Cache>();
  Tensor host = constant_value(n);
  return [cache, host](KernelContext& ctx) {
    std::call_once(cache->once, [&] { cache->device = ctx.backend().upload(host); });
    ctx.set_output(0, cache->device);
  };
}

std::string check_constant_of_shape(const ir::Node& n, std::span<const ir::DType>) {
  const Tensor* v = n.attr_tensor("value");
  if (!v) return {};
  if (elem_width(v->dtype()) == 0) return "value is " + ir::dtype_name(v->dtype());
  if (v->numel() != 1) return "value holds " + std::to_string(v->numel()) + " elements";
  return {};
}

Kernel make_constant_of_shape(const ir::Node& n) {
  const Tensor* v = n.attr_tensor("value");
  const Tensor value = v ? *v : Tensor::scalar<float>(0.f);
  const uint64_t bits = element_bits(value);
  const int width = elem_width(value.dtype());
  return [value, bits, width](KernelContext& ctx) {
    const auto dims = cpu::read_int_tensor(ctx.node(), ctx.in(0), "ConstantOfShape shape");
    for (int64_t d : dims)
      if (d < 0) throw ModelError(ctx.node().describe() + ": ConstantOfShape shape is negative");
    Tensor& y = ctx.alloc_output(0, value.dtype(), dims);
    ::mcc::cuda::fill(y.mutable_device_data(), y.numel(), bits, width);
  };
}

}  // namespace

void register_shape_ops(OpTable& t) {
  const NodeCheck data = any_fixed_width({0});
  t.add("Reshape", 1, 0, make_view, data, {1});
  t.add("Flatten", 1, 0, make_view, data);
  t.add("Squeeze", 1, 0, make_view, data, {1});
  t.add("Unsqueeze", 1, 0, make_view, data, {1});
  t.add("Identity", 1, 0, make_view, data);
  t.add("Shape", 1, 0, make_shape, data);
  t.add("Size", 1, 0, stateless(run_size), data);
  t.add("Constant", 1, 0, make_constant, check_constant);
  t.add("ConstantOfShape", 9, 0, make_constant_of_shape, check_constant_of_shape, {0});
}

}  // namespace mcc::backends::cuda
