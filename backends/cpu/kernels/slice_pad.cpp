// Windowing ops: Slice 1-13+ (opset 1 starts/ends/axes attributes; 10+ inputs with steps,
// negative steps and numpy clamping), Pad 1-24 (constant/reflect/edge/wrap; pads and value as
// attributes before 11, as inputs from 11; axes input from 18; negative pads crop),
// CenterCropPad 18+, Trilu 14+, ReverseSequence 10+.
// dtypes: every fixed-size dtype and string (byte-generic data movement); Pad's opset<11 float
// `value` attribute is converted to the data dtype (numeric and bool).
// No arithmetic, so no accumulation type.
// Not supported: packed sub-byte dtypes.
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/tensor_ops_util.h"
#include "backends/kernel_shapes.h"

namespace mcc::backends::cpu {
namespace {
using namespace tensor_ops;
using ir::DType;
using ir::Tensor;

// ---------------------------------------------------------------- Slice

// The output shape, strides into the input and offset of the last run, reused while the input's
// shape is unchanged and starts/ends/axes/steps are constants (attributes, initializers or
// Constant nodes): a Slice inside a Loop body then costs the copy alone.
struct SliceCache {
  std::mutex mu;
  bool valid = false;
  std::vector<int64_t> x_dims, od, os;
  int64_t off = 0;
};

/// An absent optional input counts as constant.
bool constant_input(const ir::Node& n, size_t i) {
  return i >= n.inputs.size() || !n.inputs[i] || is_constant_value(n.inputs[i]);
}

Kernel make_slice(const ir::Node& n) {
  const std::vector<int64_t> starts_attr = n.attr_ints("starts"), ends_attr = n.attr_ints("ends"),
                             axes_attr = n.attr_ints("axes");
  const bool attr_form = n.has_attr("starts");
  bool constant_params = true;
  for (size_t i = 1; i < 5; ++i) constant_params = constant_params && constant_input(n, i);
  auto cache = constant_params ? std::make_shared<SliceCache>() : nullptr;
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype());
    if (cache) {
      std::lock_guard<std::mutex> lock(cache->mu);
      if (cache->valid && cache->x_dims == x.dims()) {
        Tensor& y = ctx.alloc_output_overwritten(0, x.dtype(), cache->od);
        strided_copy(ctx, x, cache->off, cache->od, cache->os, y);
        return;
      }
    }
    const auto r = static_cast<int64_t>(x.rank());
    std::vector<int64_t> starts, ends, axes, steps;
    if (ctx.has_input(1)) {
      starts = read_int_tensor(ctx.node(), ctx.in(1), "Slice starts");
      ends = read_int_tensor(ctx.node(), ctx.in(2), "Slice ends");
      axes = optional_ints(ctx, 3, "Slice axes");
      steps = optional_ints(ctx, 4, "Slice steps");
    } else if (attr_form) {
      starts = starts_attr;
      ends = ends_attr;
      axes = axes_attr;
    } else {
      throw ModelError(ctx.node().describe() + ": Slice needs starts and ends");
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
      throw ModelError(ctx.node().describe() +
                       ": Slice starts, ends, axes and steps differ in length");
    const auto strides = contiguous_strides(x.dims());
    std::vector<int64_t> od = x.dims(), os = strides;
    std::vector<bool> seen(static_cast<size_t>(r), false);
    int64_t off = 0;
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t ax = normalize_axis(ctx.node(), axes[i], r);
      if (seen[static_cast<size_t>(ax)])
        throw ModelError(ctx.node().describe() + ": Slice axes repeat axis " + std::to_string(ax));
      seen[static_cast<size_t>(ax)] = true;
      const int64_t dim = x.dims()[static_cast<size_t>(ax)], step = steps[i];
      if (step == 0) throw ModelError(ctx.node().describe() + ": Slice step is zero");
      const SliceWindow w = slice_window(starts[i], ends[i], step, dim);
      const int64_t s = w.start, len = w.len;
      od[static_cast<size_t>(ax)] = len;
      os[static_cast<size_t>(ax)] = len > 1 ? step * strides[static_cast<size_t>(ax)] : 0;
      if (len > 0) off += s * strides[static_cast<size_t>(ax)];
    }
    if (cache) {
      std::lock_guard<std::mutex> lock(cache->mu);
      cache->x_dims = x.dims();
      cache->od = od;
      cache->os = os;
      cache->off = off;
      cache->valid = true;
    }
    Tensor& y = ctx.alloc_output_overwritten(0, x.dtype(), od);
    strided_copy(ctx, x, off, od, os, y);
  };
}

// ---------------------------------------------------------------- Pad

enum class PadMode { Constant, Reflect, Edge, Wrap };

Kernel make_pad(const ir::Node& n) {
  const std::string mode_s = n.attr_string("mode", "constant");
  PadMode mode;
  if (mode_s == "constant")
    mode = PadMode::Constant;
  else if (mode_s == "reflect")
    mode = PadMode::Reflect;
  else if (mode_s == "edge")
    mode = PadMode::Edge;
  else if (mode_s == "wrap")
    mode = PadMode::Wrap;
  else
    throw ModelError(n.describe() + ": Pad mode '" + mode_s +
                     "' is not constant, reflect, edge or wrap");
  const std::vector<int64_t> pads_attr =
      n.has_attr("pads") ? n.attr_ints("pads") : n.attr_ints("paddings");
  const float value_attr = n.attr_float("value", 0.f);
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype());
    const auto r = static_cast<int64_t>(x.rank());
    std::vector<int64_t> pads =
        ctx.has_input(1) ? read_int_tensor(ctx.node(), ctx.in(1), "Pad pads") : pads_attr;
    std::vector<int64_t> axes = optional_ints(ctx, 3, "Pad axes");
    if (axes.empty())
      for (int64_t i = 0; i < r; ++i) axes.push_back(i);
    if (pads.size() != 2 * axes.size())
      throw ModelError(ctx.node().describe() + ": Pad pads " + dims_str(pads) +
                       " must hold 2 values per padded axis of " + dims_str(x.dims()));
    std::vector<int64_t> before(static_cast<size_t>(r), 0), after(static_cast<size_t>(r), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto ax = static_cast<size_t>(normalize_axis(ctx.node(), axes[i], r));
      before[ax] = pads[i];
      after[ax] = pads[i + axes.size()];
    }
    // The constant, as one element of the data dtype.
    Tensor cval = Tensor::allocate(x.dtype(), {1});
    if (ctx.has_input(2) && ctx.in(2).numel() > 0) {
      const Tensor& v = ctx.in(2);
      if (v.dtype() != x.dtype())
        throw ModelError(ctx.node().describe() + ": Pad constant_value dtype " +
                         ir::dtype_name(v.dtype()) + " differs from the data dtype " +
                         ir::dtype_name(x.dtype()));
      copy_elems(v, 0, cval, 0, 1);
    } else if (value_attr != 0.f) {
      ir::dispatch<MCC_ALL_DTYPES>(x.dtype(), ctx.node().describe() + ": Pad value", [&](auto tag) {
        using T = typename decltype(tag)::type;
        cval.mutable_data<T>()[0] = static_cast<T>(value_attr);
      });
    }
    std::vector<int64_t> out(static_cast<size_t>(r));
    for (size_t d = 0; d < static_cast<size_t>(r); ++d) {
      out[d] = x.dims()[d] + before[d] + after[d];
      if (out[d] < 0)
        throw ModelError(ctx.node().describe() + ": Pad pads " + dims_str(pads) +
                         " crop more than the input " + dims_str(x.dims()));
      if (mode != PadMode::Constant && x.dims()[d] == 0 && out[d] > 0)
        throw ModelError(ctx.node().describe() + ": Pad mode " + mode_s +
                         " cannot pad an empty axis");
    }
    Tensor& y = ctx.alloc_output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    // Per-axis maps from output coordinate to input coordinate (-1: the constant).
    std::vector<std::vector<int64_t>> map(static_cast<size_t>(r));
    for (size_t d = 0; d < static_cast<size_t>(r); ++d) {
      const int64_t dim = x.dims()[d];
      map[d].resize(static_cast<size_t>(out[d]));
      for (int64_t o = 0; o < out[d]; ++o) {
        int64_t i = o - before[d];
        if (i < 0 || i >= dim) {
          switch (mode) {
            case PadMode::Constant:
              i = -1;
              break;
            case PadMode::Edge:
              i = std::clamp(i, int64_t{0}, dim - 1);
              break;
            case PadMode::Wrap:
              i = ((i % dim) + dim) % dim;
              break;
            case PadMode::Reflect: {
              if (dim == 1) {
                i = 0;
                break;
              }
              const int64_t period = 2 * (dim - 1);
              i = ((i % period) + period) % period;
              if (i >= dim) i = period - i;
              break;
            }
          }
        }
        map[d][static_cast<size_t>(o)] = i;
      }
    }
    if (r == 0) {
      copy_elems(x, 0, y, 0, 1);
      return;
    }
    const auto in_strides = contiguous_strides(x.dims());
    const int64_t last = out.back(), rows = y.numel() / last;
    const auto& lmap = map.back();
    const size_t outer_rank = static_cast<size_t>(r) - 1;
    with_elem_copy(x, y, [&](auto copy) {
      ctx.parallel_for(rows, last, [&](int64_t b, int64_t e) {
        std::vector<int64_t> idx(outer_rank);
        for (int64_t row = b; row < e; ++row) {
          int64_t rem = row, base = 0;
          bool constant_row = false;
          for (size_t k = outer_rank; k-- > 0;) {
            idx[k] = rem % out[k];
            rem /= out[k];
            const int64_t src = map[k][static_cast<size_t>(idx[k])];
            if (src < 0)
              constant_row = true;
            else
              base += src * in_strides[k];
          }
          const int64_t d0 = row * last;
          if (constant_row) {
            fill_elems(cval, 0, y, d0, last);
            continue;
          }
          int64_t o = 0;
          while (o < last) {
            const int64_t src = lmap[static_cast<size_t>(o)];
            if (src < 0) {  // run of constants
              int64_t end = o;
              while (end < last && lmap[static_cast<size_t>(end)] < 0) ++end;
              fill_elems(cval, 0, y, d0 + o, end - o);
              o = end;
            } else if (o - before.back() == src) {  // run copied straight from the input row
              int64_t end = o;
              while (end < last && lmap[static_cast<size_t>(end)] == end - before.back()) ++end;
              copy_elems(x, base + src, y, d0 + o, end - o);
              o = end;
            } else {
              copy(d0 + o, base + src);
              ++o;
            }
          }
        }
      });
    });
  };
}

// ---------------------------------------------------------------- CenterCropPad

Kernel make_center_crop_pad(const ir::Node& n) {
  const std::vector<int64_t> axes_attr = n.attr_ints("axes");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype());
    const auto r = static_cast<int64_t>(x.rank());
    const auto shape = read_int_tensor(ctx.node(), ctx.in(1), "CenterCropPad shape");
    std::vector<int64_t> axes = axes_attr;
    if (axes.empty())
      for (int64_t i = 0; i < r; ++i) axes.push_back(i);
    if (shape.size() != axes.size())
      throw ModelError(ctx.node().describe() + ": CenterCropPad shape " + dims_str(shape) +
                       " needs one value per axis");
    std::vector<int64_t> out = x.dims();
    for (size_t i = 0; i < axes.size(); ++i) {
      if (shape[i] < 0)
        throw ModelError(ctx.node().describe() + ": CenterCropPad shape " + dims_str(shape) +
                         " is negative");
      out[static_cast<size_t>(normalize_axis(ctx.node(), axes[i], r))] = shape[i];
    }
    // Per axis: the input window [src, src+len) lands at [dst, dst+len) of the output. Crops
    // start at floor((in-out)/2); pads put the odd extra element on the right.
    std::vector<int64_t> src(static_cast<size_t>(r)), dst(static_cast<size_t>(r)),
        len(static_cast<size_t>(r));
    for (size_t d = 0; d < static_cast<size_t>(r); ++d) {
      const int64_t in = x.dims()[d];
      src[d] = in > out[d] ? (in - out[d]) / 2 : 0;
      dst[d] = out[d] > in ? (out[d] - in) / 2 : 0;
      len[d] = std::min(in, out[d]);
    }
    Tensor& y = ctx.alloc_output(0, x.dtype(), out);
    const Tensor zero = Tensor::allocate(x.dtype(), {1});
    fill_elems(zero, 0, y, 0, y.numel());
    if (y.numel() == 0 || x.numel() == 0) return;
    if (r == 0) {
      copy_elems(x, 0, y, 0, 1);
      return;
    }
    const auto is = contiguous_strides(x.dims()), os = contiguous_strides(out);
    std::vector<int64_t> rows_dims(len.begin(), len.end() - 1);
    const int64_t rows = ir::checked_numel(rows_dims);
    std::vector<int64_t> idx(rows_dims.size(), 0);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t so = src.back(), dof = dst.back();
      for (size_t k = 0; k < idx.size(); ++k) {
        so += (src[k] + idx[k]) * is[k];
        dof += (dst[k] + idx[k]) * os[k];
      }
      copy_elems(x, so, y, dof, len.back());
      for (size_t k = idx.size(); k-- > 0;) {
        if (++idx[k] < rows_dims[k]) break;
        idx[k] = 0;
      }
    }
  };
}

// ---------------------------------------------------------------- Trilu

Kernel make_trilu(const ir::Node& n) {
  const bool upper = n.attr_int("upper", 1) != 0;
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype());
    if (x.rank() < 2)
      throw ModelError(ctx.node().describe() + ": Trilu input must have rank >= 2, got " +
                       dims_str(x.dims()));
    const int64_t k = ctx.has_input(1) ? scalar_int(ctx, 1, "Trilu k") : 0;
    const int64_t rows = x.dims()[x.rank() - 2], cols = x.dims()[x.rank() - 1];
    Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    if (y.numel() == 0) return;
    const Tensor zero = Tensor::allocate(x.dtype(), {1});
    const int64_t mats = y.numel() / (rows * cols);
    ctx.parallel_for(mats * rows, cols, [&](int64_t b, int64_t e) {
      for (int64_t mr = b; mr < e; ++mr) {
        const int64_t i = mr % rows, base = mr * cols;
        // Upper keeps j >= i + k; lower keeps j <= i + k.
        const int64_t lo = upper ? std::clamp(i + k, int64_t{0}, cols) : 0;
        const int64_t hi = upper ? cols : std::clamp(i + k + 1, int64_t{0}, cols);
        fill_elems(zero, 0, y, base, lo);
        copy_elems(x, base + lo, y, base + lo, hi - lo);
        fill_elems(zero, 0, y, base + std::max(hi, lo), cols - std::max(hi, lo));
      }
    });
  };
}

// ---------------------------------------------------------------- ReverseSequence

Kernel make_reverse_sequence(const ir::Node& n) {
  const int64_t batch_axis = n.attr_int("batch_axis", 1), time_axis = n.attr_int("time_axis", 0);
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    throw ModelError(n.describe() +
                     ": ReverseSequence batch_axis and time_axis must be 0 and 1 in some order");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype());
    if (x.rank() < 2)
      throw ModelError(ctx.node().describe() + ": ReverseSequence input must have rank >= 2");
    const auto lens = read_int_tensor(ctx.node(), ctx.in(1), "ReverseSequence sequence_lens");
    const int64_t B = x.dims()[static_cast<size_t>(batch_axis)],
                  T = x.dims()[static_cast<size_t>(time_axis)];
    if (static_cast<int64_t>(lens.size()) != B)
      throw ModelError(ctx.node().describe() + ": ReverseSequence sequence_lens has " +
                       std::to_string(lens.size()) + " values for batch " + std::to_string(B));
    for (int64_t l : lens)
      if (l < 0 || l > T)
        throw ModelError(ctx.node().describe() + ": ReverseSequence length " + std::to_string(l) +
                         " is outside [0, " + std::to_string(T) + "]");
    int64_t inner = 1;
    for (size_t d = 2; d < x.rank(); ++d) inner *= x.dims()[d];
    const int64_t sb = (batch_axis == 0 ? T : 1) * inner, st = (time_axis == 0 ? B : 1) * inner;
    Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t l = lens[static_cast<size_t>(b)];
        const int64_t src_t = t < l ? l - 1 - t : t;
        copy_elems(x, b * sb + src_t * st, y, b * sb + t * st, inner);
      }
  };
}

}  // namespace

void register_slice_pad(KernelRegistry& r) {
  r.add("Slice", 1, 0, make_slice);
  r.add("Pad", 1, 0, make_pad);
  r.add("CenterCropPad", 18, 0, make_center_crop_pad);
  r.add("Trilu", 14, 0, make_trilu);
  r.add("ReverseSequence", 10, 0, make_reverse_sequence);
}

}  // namespace mcc::backends::cpu
