// Windowing ops on the cuda backend.
//   Slice: opset 1-9 starts/ends/axes attributes; 10+ starts/ends/axes/steps host inputs with
//   negative steps and the cpu kernel's numpy clamping; a strided copy of the window.
//   Pad: constant / reflect / edge / wrap; pads and value attributes before 11, pads,
//   constant_value and axes (18+) host inputs from 11; negative pads crop.
// dtypes: every fixed-width type of 1, 2, 4 or 8 bytes.
// Declined: strings, sub-byte types, Pad above rank 8, unknown Pad modes.
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/kernel_shapes.h"
#include "backends/cuda/kernels/pad.h"
#include "backends/cuda/ops/data_movement.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

using ir::Tensor;
namespace dev = ::mcc::cuda;

std::vector<int64_t> optional_ints(const KernelContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return {};
  return cpu::read_int_tensor(ctx.node(), ctx.in(i), what);
}

Kernel make_slice(const ir::Node& n) {
  const std::vector<int64_t> starts_attr = n.attr_ints("starts"), ends_attr = n.attr_ints("ends"),
                             axes_attr = n.attr_ints("axes");
  const bool attr_form = n.has_attr("starts");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const auto r = static_cast<int64_t>(x.rank());
    std::vector<int64_t> starts, ends, axes, steps;
    if (ctx.has_input(1)) {
      starts = cpu::read_int_tensor(ctx.node(), ctx.in(1), "Slice starts");
      ends = cpu::read_int_tensor(ctx.node(), ctx.in(2), "Slice ends");
      axes = optional_ints(ctx, 3, "Slice axes");
      steps = optional_ints(ctx, 4, "Slice steps");
    } else if (attr_form) {
      starts = starts_attr, ends = ends_attr, axes = axes_attr;
    } else {
      throw ModelError(ctx.node().describe() + ": Slice needs starts and ends");
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      throw ModelError(ctx.node().describe() + ": Slice starts, ends, axes and steps differ in length");
    const auto strides = cpu::contiguous_strides(x.dims());
    std::vector<int64_t> od = x.dims(), os = strides;
    std::vector<bool> seen(static_cast<size_t>(r), false);
    int64_t off = 0;
    for (size_t i = 0; i < starts.size(); ++i) {
      const auto ax = static_cast<size_t>(cpu::normalize_axis(ctx.node(), axes[i], r));
      if (seen[ax]) throw ModelError(ctx.node().describe() + ": Slice axes repeat axis " + std::to_string(ax));
      seen[ax] = true;
      if (steps[i] == 0) throw ModelError(ctx.node().describe() + ": Slice step is zero");
      const SliceWindow w = slice_window(starts[i], ends[i], steps[i], x.dims()[ax]);
      od[ax] = w.len;
      os[ax] = w.len > 1 ? steps[i] * strides[ax] : 0;
      if (w.len > 0) off += w.start * strides[ax];
    }
    Tensor& y = ctx.alloc_output(0, x.dtype(), od);
    device_strided_copy(ctx.node(), x, off, od, os, y);
  };
}

dev::PadMode pad_mode(const std::string& s) {
  if (s == "reflect") return dev::PadMode::Reflect;
  if (s == "edge") return dev::PadMode::Edge;
  if (s == "wrap") return dev::PadMode::Wrap;
  return dev::PadMode::Constant;
}

std::string check_pad(const ir::Node& n, std::span<const ir::DType>) {
  const std::string mode = n.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") return "Pad mode " + mode;
  return {};
}

/// The bits of the pad constant in x's dtype: constant_value input, else the value attribute.
uint64_t pad_constant(const KernelContext& ctx, const Tensor& x, float value_attr) {
  if (ctx.has_input(2) && ctx.in(2).numel() > 0) {
    const Tensor& v = ctx.in(2);
    if (v.dtype() != x.dtype())
      throw ModelError(ctx.node().describe() + ": Pad constant_value dtype " + ir::dtype_name(v.dtype()) +
                       " differs from the data dtype " + ir::dtype_name(x.dtype()));
    return element_bits(v);
  }
  Tensor c = Tensor::allocate(x.dtype(), {1});
  if (value_attr != 0.f)
    ir::dispatch<MCC_ALL_DTYPES>(x.dtype(), ctx.node().describe() + ": Pad value", [&](auto tag) {
      using T = typename decltype(tag)::type;
      c.mutable_data<T>()[0] = static_cast<T>(value_attr);
    });
  return element_bits(c);
}

Kernel make_pad(const ir::Node& n) {
  const std::string mode_s = n.attr_string("mode", "constant");
  const dev::PadMode mode = pad_mode(mode_s);
  const std::vector<int64_t> pads_attr = n.has_attr("pads") ? n.attr_ints("pads") : n.attr_ints("paddings");
  const float value_attr = n.attr_float("value", 0.f);
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const auto r = static_cast<int64_t>(x.rank());
    if (r > dev::kMaxPadRank) throw ModelError(ctx.node().describe() + ": the cuda Pad handles rank <= 8");
    const std::vector<int64_t> pads =
        ctx.has_input(1) ? cpu::read_int_tensor(ctx.node(), ctx.in(1), "Pad pads") : pads_attr;
    std::vector<int64_t> axes = optional_ints(ctx, 3, "Pad axes");
    if (axes.empty())
      for (int64_t i = 0; i < r; ++i) axes.push_back(i);
    if (pads.size() != 2 * axes.size())
      throw ModelError(ctx.node().describe() + ": Pad pads must hold 2 values per padded axis");
    dev::PadGeometry g;
    g.rank = static_cast<int>(r);
    std::vector<int64_t> after(static_cast<size_t>(r), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto ax = static_cast<size_t>(cpu::normalize_axis(ctx.node(), axes[i], r));
      g.before[ax] = pads[i];
      after[ax] = pads[i + axes.size()];
    }
    std::vector<int64_t> out(static_cast<size_t>(r));
    for (size_t d = 0; d < out.size(); ++d) {
      out[d] = x.dims()[d] + g.before[d] + after[d];
      if (out[d] < 0) throw ModelError(ctx.node().describe() + ": Pad pads crop more than the input");
      if (mode != dev::PadMode::Constant && x.dims()[d] == 0 && out[d] > 0)
        throw ModelError(ctx.node().describe() + ": Pad mode " + mode_s + " cannot pad an empty axis");
      g.in_dims[d] = x.dims()[d];
      g.out_dims[d] = out[d];
    }
    const uint64_t constant = pad_constant(ctx, x, value_attr);
    Tensor& y = ctx.alloc_output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    dev::pad(x.device_data(), y.mutable_device_data(), g, mode, constant, elem_width(x.dtype()));
  };
}

}  // namespace

void register_slice_pad(OpTable& t) {
  t.add("Slice", 1, 9, make_slice, any_fixed_width({0}));
  t.add("Slice", 10, 0, make_slice, any_fixed_width({0}), {1, 2, 3, 4});
  t.add("Pad", 1, 10, make_pad, all_of({any_fixed_width({0}), rank_at_most(0, 8), check_pad}));
  t.add("Pad", 11, 0, make_pad, all_of({any_fixed_width({0}), rank_at_most(0, 8), check_pad}), {1, 2, 3});
}

}  // namespace mcc::backends::cuda
