// The cuda backend's Dropout (inference), Where, Clip, Cast and CastLike: NodeChecks, factories
// and launches of kernels/where_clip_cast.cu.
// Handled: Dropout 7+ in inference (the identity; no ratio/training_mode input, no mask output);
// Where 9+ on any fixed-width element type with a bool condition and numpy broadcasting;
// Clip 6-10 (min/max attributes) on f32/f16 and 11+ (optional scalar min/max inputs, read by the
// kernel on the device) on f32, f16, i32, i64; Cast 6+ and CastLike 15+ between f32, f16, i32, i64, bool, u8, i8.
// Declined: other dtypes (f64, bf16, strings, float8, 4-bit types), Cast before opset 6 (`to`
// as a type name), mixed x/y dtypes of Where.
#include <limits>
#include <string>

#include "backends/cuda/kernels/where_clip_cast.h"
#include "backends/cuda/op_table.h"
#include "backends/cuda/ops/elementwise_util.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

using ir::DType;

constexpr std::initializer_list<DType> kFixedWidth = {
    DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,  DType::U8,  DType::I16,
    DType::U16, DType::I32, DType::U32,  DType::I64, DType::U64, DType::Bool};

// ---------------------------------------------------------------- Where

std::string where_check(const ir::Node& n, std::span<const DType> dts) {
  std::string r = check_input_type(n, dts, 0, {DType::Bool});
  if (r.empty()) r = check_input_type(n, dts, 1, kFixedWidth);
  if (r.empty()) r = check_same_types(n, dts, 1, 3);
  return r;
}

Kernel where_kernel(const ir::Node&) {
  return [](KernelContext& ctx) {
    const ir::Tensor& c = ctx.in(0);
    const ir::Tensor& x = ctx.in(1);
    const ir::Tensor& z = ctx.in(2);
    const Broadcast bc = broadcast(ctx.node(), {c.dims(), x.dims(), z.dims()});
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), bc.out);
    mcc::cuda::where(static_cast<int>(ir::dtype_size(x.dtype())), c.device_data(), bc.in[0], x.device_data(),
                     bc.in[1], z.device_data(), bc.in[2], y.mutable_device_data(), bc.numel);
  };
}

// ---------------------------------------------------------------- Clip

std::string clip_check(const ir::Node& n, std::span<const DType> dts) {
  if (n.since_version < 11) return check_input_type(n, dts, 0, {DType::F32, DType::F16});
  std::string r = check_input_type(n, dts, 0, {DType::F32, DType::F16, DType::I32, DType::I64});
  return r.empty() ? check_same_types(n, dts, 0) : r;
}

/// The device address of the scalar bound input i, or nullptr when it is omitted.
const void* device_bound(KernelContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return nullptr;
  const ir::Tensor& t = ctx.in(i);
  if (t.numel() != 1)
    throw ModelError(ctx.node().describe() + ": Clip " + (i == 1 ? "min" : "max") + " must be a scalar");
  return t.device_data();
}

Kernel clip_kernel(const ir::Node& n) {
  const bool attrs = n.since_version < 11;
  const float lo_attr = n.attr_float("min", std::numeric_limits<float>::lowest());
  const float hi_attr = n.attr_float("max", std::numeric_limits<float>::max());
  return [attrs, lo_attr, hi_attr](KernelContext& ctx) {
    const ir::Tensor& x = ctx.in(0);
    mcc::cuda::ClipBounds b{std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max(), 0, 0};
    if (x.dtype() == DType::I32) b.lo_i = std::numeric_limits<int32_t>::min(), b.hi_i = std::numeric_limits<int32_t>::max();
    else b.lo_i = std::numeric_limits<int64_t>::min(), b.hi_i = std::numeric_limits<int64_t>::max();
    if (attrs) {
      b.lo_f = lo_attr;
      b.hi_f = hi_attr;
    } else {
      b.lo_dev = device_bound(ctx, 1);
      b.hi_dev = device_bound(ctx, 2);
    }
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    mcc::cuda::clip(*elem_type(x.dtype()), x.device_data(), y.mutable_device_data(), x.numel(), b);
  };
}

// ---------------------------------------------------------------- Cast, CastLike

constexpr std::initializer_list<DType> kCastTypes = {DType::F32, DType::F16, DType::I32, DType::I64,
                                                     DType::Bool, DType::U8,  DType::I8};

std::string cast_check(const ir::Node& n, std::span<const DType> dts) {
  std::string r = check_input_type(n, dts, 0, kCastTypes);
  if (!r.empty()) return r;
  if (n.op_type == "CastLike") return check_input_type(n, dts, 1, kCastTypes);
  const auto to = static_cast<DType>(n.attr_int("to", 0));
  for (DType d : kCastTypes)
    if (d == to) return "";
  return "cast to " + ir::dtype_name(to);
}

Kernel cast_kernel(const ir::Node& n) {
  const bool like = n.op_type == "CastLike";
  const auto to_attr = static_cast<DType>(like ? 0 : n.attr_int("to", 0));
  return [like, to_attr](KernelContext& ctx) {
    const ir::Tensor& x = ctx.in(0);
    const DType to = like ? ctx.in(1).dtype() : to_attr;
    ir::Tensor& y = ctx.alloc_output(0, to, x.dims());
    mcc::cuda::cast(*elem_type(x.dtype()), *elem_type(to), x.device_data(), y.mutable_device_data(), x.numel());
  };
}

// ---------------------------------------------------------------- Dropout (inference)

std::string dropout_check(const ir::Node& n, std::span<const DType>) {
  if (n.inputs.size() > 1 && n.inputs[1]) return "the ratio input is given";
  if (n.inputs.size() > 2 && n.inputs[2]) return "the training_mode input is given";
  if (node_wants_output(n, 1)) return "the mask output is requested";
  return "";
}

/// Inference Dropout is the identity: the output is the input tensor itself.
Kernel dropout_kernel(const ir::Node&) {
  return [](KernelContext& ctx) { ctx.set_output(0, ctx.in(0)); };
}

}  // namespace

void register_where_clip_cast(OpTable& t) {
  t.add("Dropout", 7, 0, dropout_kernel, dropout_check);
  t.add("Where", 9, 0, where_kernel, where_check);
  t.add("Clip", 6, 10, clip_kernel, clip_check);
  t.add("Clip", 11, 0, clip_kernel, clip_check);
  t.add("Cast", 6, 0, cast_kernel, cast_check);
  t.add("CastLike", 15, 0, cast_kernel, cast_check);
}

}  // namespace mcc::backends::cuda
