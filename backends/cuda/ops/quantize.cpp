// QuantizeLinear and DequantizeLinear on the cuda backend (opsets 10, 13, 19, 21+): per-tensor
// (one-element scale) or per-axis (1-D scale along `axis`) scale and zero point, both read on
// the device. Quantize: x f32 / f16 / i32, scale f32 / f16, y u8 / i8 / u16 / i16 (zero point
// type, else output_dtype, else u8), round half to even and saturation as the cpu kernel.
// Dequantize: x u8 / i8 / u16 / i16 / i32, scale f32 / f16, y the scale type (or output_dtype).
// Declined: block_size, float8 / float4 / 4-bit / 2-bit types, bf16, quantizing to int32, an
//   output_dtype that disagrees with the zero point.
#include <string>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cuda/kernels/quantize.h"
#include "backends/cuda/op_table.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

using ir::DType;
using ir::Tensor;
namespace dev = ::mcc::cuda;

bool to_elem(DType dt, dev::QuantElem* e) {
  switch (dt) {
    case DType::U8: *e = dev::QuantElem::U8; return true;
    case DType::I8: *e = dev::QuantElem::I8; return true;
    case DType::U16: *e = dev::QuantElem::U16; return true;
    case DType::I16: *e = dev::QuantElem::I16; return true;
    case DType::I32: *e = dev::QuantElem::I32; return true;
    case DType::F32: *e = dev::QuantElem::F32; return true;
    case DType::F16: *e = dev::QuantElem::F16; return true;
    default: return false;
  }
}
dev::QuantElem elem_of(DType dt) {
  dev::QuantElem e = dev::QuantElem::F32;
  to_elem(dt, &e);
  return e;
}

bool is_quant_int(DType dt) { return dt == DType::U8 || dt == DType::I8 || dt == DType::U16 || dt == DType::I16; }
bool is_float(DType dt) { return dt == DType::F32 || dt == DType::F16; }

DType input_type(std::span<const DType> dts, size_t i) { return i < dts.size() ? dts[i] : DType::Undefined; }
bool present(const ir::Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i]; }

std::string check_common(const ir::Node& n, std::span<const DType> dts) {
  if (n.attr_int("block_size", 0) != 0) return "block_size";
  if (!is_float(input_type(dts, 1))) return "scale is " + ir::dtype_name(input_type(dts, 1));
  return {};
}

std::string check_quantize(const ir::Node& n, std::span<const DType> dts) {
  if (std::string why = check_common(n, dts); !why.empty()) return why;
  const DType x = input_type(dts, 0);
  if (!is_float(x) && x != DType::I32) return "input 0 is " + ir::dtype_name(x);
  const auto out_attr = static_cast<DType>(n.attr_int("output_dtype", 0));
  const DType zp = present(n, 2) ? input_type(dts, 2) : DType::Undefined;
  const DType y = present(n, 2) ? zp : (out_attr != DType::Undefined ? out_attr : DType::U8);
  if (!is_quant_int(y)) return "quantized type " + ir::dtype_name(y);
  if (out_attr != DType::Undefined && out_attr != y) return "output_dtype differs from the zero point";
  return {};
}

std::string check_dequantize(const ir::Node& n, std::span<const DType> dts) {
  if (std::string why = check_common(n, dts); !why.empty()) return why;
  const DType x = input_type(dts, 0);
  if (!is_quant_int(x) && x != DType::I32) return "input 0 is " + ir::dtype_name(x);
  if (present(n, 2) && input_type(dts, 2) != x) return "zero point type differs from x";
  const auto out_attr = static_cast<DType>(n.attr_int("output_dtype", 0));
  if (out_attr != DType::Undefined && !is_float(out_attr)) return "output_dtype " + ir::dtype_name(out_attr);
  return {};
}

/// Per-tensor or per-axis layout of the scale over x, with the cpu kernel's shape rules.
dev::QuantLayout layout_of(const ir::Node& n, const std::vector<int64_t>& xd, const Tensor& scale, int64_t axis_attr) {
  dev::QuantLayout L;
  L.count = ir::checked_numel(xd);
  if (scale.numel() == 1 && scale.rank() <= 1) return L;
  const auto rank = static_cast<int64_t>(xd.size());
  if (rank == 0) throw ModelError(n.describe() + ": a non-scalar scale needs an input of rank >= 1");
  const auto axis = static_cast<size_t>(cpu::normalize_axis(n, axis_attr, rank));
  L.per_tensor = false;
  L.axis_len = xd[axis];
  for (size_t i = axis + 1; i < xd.size(); ++i) L.inner *= xd[i];
  if (scale.rank() != 1 || scale.dims()[0] != L.axis_len)
    throw ModelError(n.describe() + ": per-axis scale must be 1-D of length " + std::to_string(L.axis_len) +
                     " (axis " + std::to_string(axis) + ")");
  return L;
}

/// The zero point's device address (nullptr when absent) after checking its element count.
const void* zero_point(const KernelContext& ctx, const Tensor& scale) {
  if (!ctx.has_input(2)) return nullptr;
  const Tensor& z = ctx.in(2);
  if (z.numel() != scale.numel())
    throw ModelError(ctx.node().describe() + ": zero point has " + std::to_string(z.numel()) +
                     " elements, the scale has " + std::to_string(scale.numel()));
  return z.device_data();
}

Kernel make_quantize(const ir::Node& node) {
  const int64_t axis = node.attr_int("axis", 1);
  const int64_t out_attr = node.attr_int("output_dtype", 0);
  return [=](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &s = ctx.in(1);
    const DType qt = ctx.has_input(2) ? ctx.in(2).dtype() : (out_attr ? static_cast<DType>(out_attr) : DType::U8);
    const dev::QuantLayout L = layout_of(ctx.node(), x.dims(), s, axis);
    const void* zp = zero_point(ctx, s);
    Tensor& y = ctx.alloc_output(0, qt, x.dims());
    dev::quantize_linear(x.device_data(), elem_of(x.dtype()), s.device_data(), elem_of(s.dtype()), zp,
                         y.mutable_device_data(), elem_of(qt), L);
  };
}

Kernel make_dequantize(const ir::Node& node) {
  const int64_t axis = node.attr_int("axis", 1);
  const int64_t out_attr = node.attr_int("output_dtype", 0);
  return [=](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &s = ctx.in(1);
    const DType yt = out_attr ? static_cast<DType>(out_attr) : s.dtype();
    const dev::QuantLayout L = layout_of(ctx.node(), x.dims(), s, axis);
    const void* zp = zero_point(ctx, s);
    Tensor& y = ctx.alloc_output(0, yt, x.dims());
    dev::dequantize_linear(x.device_data(), elem_of(x.dtype()), s.device_data(), elem_of(s.dtype()), zp,
                           y.mutable_device_data(), elem_of(yt), L);
  };
}

}  // namespace

void register_quantize(OpTable& t) {
  t.add("QuantizeLinear", 10, 0, make_quantize, check_quantize);
  t.add("DequantizeLinear", 10, 0, make_dequantize, check_dequantize);
}

}  // namespace mcc::backends::cuda
