// BitCast (opset 26+): reinterprets the bytes of a tensor as another dtype of the same bit width
// (`to` attribute), shape unchanged. The output shares the input's buffer (no copy), except for
// a bool target, whose bytes are copied and normalised to 0/1 (any other byte is not a valid
// C++ bool; ONNX leaves such patterns undefined).
// dtypes: every fixed-width dtype mcc's IR knows (f32, f64, f16, bf16, i8..i64, u8..u64, bool,
// c64, c128, the float8/float4 types, i4/u4, i2/u2, f8e8m0); storage is little-endian, as the
// host. No arithmetic. Not supported: string (ModelError, as the spec excludes it) and dtypes
// the IR does not know (UnsupportedError).
#include <string>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/kernel_registry.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;

bool known_fixed_width(DType dt) { return dt != DType::String && ir::info(dt).bits > 0; }

Kernel make_bitcast(const ir::Node& n) {
  if (!n.attr("to")) throw ModelError(n.describe() + ": BitCast needs the 'to' attribute");
  const auto to = static_cast<DType>(n.attr_int("to", 0));
  if (to == DType::String) throw ModelError(n.describe() + ": BitCast to string is not allowed");
  if (!known_fixed_width(to))
    throw UnsupportedError(n.describe() + ": BitCast to " + ir::dtype_name(to) +
                           " is not supported by the cpu backend");
  return [to](KernelContext& ctx) {
    const ir::Node& node = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.dtype() == DType::String)
      throw ModelError(node.describe() + ": BitCast of a string tensor is not allowed");
    if (!known_fixed_width(x.dtype()))
      throw UnsupportedError(node.describe() + ": BitCast from " + ir::dtype_name(x.dtype()) +
                             " is not supported by the cpu backend");
    if (ir::info(x.dtype()).bits != ir::info(to).bits)
      throw ModelError(node.describe() + ": BitCast from " + ir::dtype_name(x.dtype()) + " (" +
                       std::to_string(ir::info(x.dtype()).bits) + " bits) to " +
                       ir::dtype_name(to) + " (" + std::to_string(ir::info(to).bits) +
                       " bits): the widths differ");
    if (to == DType::Bool) {
      ir::Tensor& y = ctx.alloc_output(0, to, x.dims());
      const std::byte* src = x.raw();
      bool* dst = y.mutable_data<bool>().data();
      for (int64_t i = 0; i < x.numel(); ++i) dst[i] = src[i] != std::byte{0};
      return;
    }
    ctx.set_output(0, ir::Tensor::from_buffer(to, x.dims(), x.buffer()));
  };
}

}  // namespace

void register_bitcast(KernelRegistry& r) { r.add("BitCast", 26, 0, make_bitcast); }

}  // namespace mcc::backends::cpu
