// Layout ops on the cuda backend: Concat (axis; opset 1-3 default axis 1), Split (split
// attribute before 13, host input from 13, num_outputs with an uneven last chunk from 18),
// Transpose (perm, default reversed), DepthToSpace (DCR and CRD) and SpaceToDepth, Expand (host
// shape input, numpy broadcasting; no copy when the shape does not change) and Tile (host repeats
// input, opset 6+).
// Concat and Split copy [outer, len * inner] row blocks; Transpose, DepthToSpace, SpaceToDepth and
// Expand are strided copies;
// Tile repeats by coordinate modulo. Empty inputs and outputs are allowed.
// dtypes: every fixed-width type of 1, 2, 4 or 8 bytes (byte-generic movement).
// Declined: strings, sub-byte types, Tile-1 (tiles/axis inputs), Tile above rank 8.
#include <string>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/kernel_shapes.h"
#include "backends/cuda/kernels/concat_split.h"
#include "backends/cuda/kernels/copy_strided.h"
#include "backends/cuda/ops/data_movement.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

using ir::Tensor;

/// Element pointer arithmetic on a device tensor.
const void* at(const Tensor& t, int64_t elem) {
  return static_cast<const std::byte*>(t.device_data()) + elem * elem_width(t.dtype());
}
void* at(Tensor& t, int64_t elem) {
  return static_cast<std::byte*>(t.mutable_device_data()) + elem * elem_width(t.dtype());
}

int64_t prod(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) p *= d[i];
  return p;
}

Kernel make_concat(const ir::Node& n) {
  if (!n.has_attr("axis") && n.since_version >= 4)
    throw ModelError(n.describe() + ": Concat requires the axis attribute");
  const int64_t axis_attr = n.attr_int("axis", 1);
  return [=](KernelContext& ctx) {
    if (ctx.num_inputs() == 0) throw ModelError(ctx.node().describe() + ": Concat needs at least one input");
    const Tensor& first = ctx.in(0);
    const auto r = static_cast<int64_t>(first.rank());
    if (r == 0) throw ModelError(ctx.node().describe() + ": Concat inputs must have rank >= 1");
    const auto axis = static_cast<size_t>(cpu::normalize_axis(ctx.node(), axis_attr, r));
    std::vector<int64_t> out = first.dims();
    out[axis] = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& t = ctx.in(i);
      bool same = t.dtype() == first.dtype() && t.rank() == first.rank();
      for (size_t d = 0; same && d < first.rank(); ++d) same = d == axis || t.dims()[d] == first.dims()[d];
      if (!same)
        throw ModelError(ctx.node().describe() + ": Concat input " + std::to_string(i) +
                         " does not match input 0 outside axis " + std::to_string(axis));
      out[axis] += t.dims()[axis];
    }
    const int64_t outer = prod(out, 0, axis), inner = prod(out, axis + 1, out.size());
    const int64_t row = out[axis] * inner;
    Tensor& y = ctx.alloc_output(0, first.dtype(), out);
    int64_t offset = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& t = ctx.in(i);
      const int64_t len = t.dims()[axis] * inner;
      if (y.numel() > 0 && len > 0)
        ::mcc::cuda::copy_rows(t.device_data(), len, at(y, offset), row, outer, len, elem_width(t.dtype()));
      offset += len;
    }
  };
}

/// Split sizes along an axis of length dim for nout outputs, as the cpu kernel computes them.
std::vector<int64_t> split_sizes(const ir::Node& n, std::vector<int64_t> sizes, bool has_num,
                                 int64_t num_outputs, int64_t dim, int64_t nout) {
  if (sizes.empty()) {
    if (has_num && num_outputs != nout)
      throw ModelError(n.describe() + ": Split num_outputs differs from the number of outputs");
    if (!has_num && dim % nout != 0)
      throw ModelError(n.describe() + ": Split cannot divide axis of size " + std::to_string(dim) + " into " +
                       std::to_string(nout) + " equal parts");
    const int64_t chunk = has_num ? (dim + nout - 1) / nout : dim / nout;
    for (int64_t i = 0; i < nout; ++i) sizes.push_back(std::clamp(dim - i * chunk, int64_t{0}, chunk));
  }
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw ModelError(n.describe() + ": Split sizes are negative");
    sum += s;
  }
  if (static_cast<int64_t>(sizes.size()) != nout || sum != dim)
    throw ModelError(n.describe() + ": Split sizes do not cover axis of size " + std::to_string(dim) + " with " +
                     std::to_string(nout) + " outputs");
  return sizes;
}

Kernel make_split(const ir::Node& n) {
  const int64_t axis_attr = n.attr_int("axis", 0);
  const std::vector<int64_t> split_attr = n.attr_ints("split");
  const bool has_num = n.has_attr("num_outputs");
  const int64_t num_outputs = n.attr_int("num_outputs", 0);
  if (has_num && num_outputs < 1) throw ModelError(n.describe() + ": Split num_outputs must be >= 1");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const auto axis =
        static_cast<size_t>(cpu::normalize_axis(ctx.node(), axis_attr, static_cast<int64_t>(x.rank())));
    const int64_t dim = x.dims()[axis];
    const auto nout = static_cast<int64_t>(ctx.num_outputs());
    const auto sizes = split_sizes(
        ctx.node(), ctx.has_input(1) ? cpu::read_int_tensor(ctx.node(), ctx.in(1), "Split split") : split_attr,
        has_num, num_outputs, dim, nout);
    const int64_t outer = prod(x.dims(), 0, axis), inner = prod(x.dims(), axis + 1, x.rank());
    int64_t start = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (ctx.wants_output(i)) {
        std::vector<int64_t> od = x.dims();
        od[axis] = sizes[i];
        Tensor& y = ctx.alloc_output(i, x.dtype(), od);
        if (y.numel() > 0)
          ::mcc::cuda::copy_rows(at(x, start * inner), dim * inner, y.mutable_device_data(), sizes[i] * inner, outer,
                                 sizes[i] * inner, elem_width(x.dtype()));
      }
      start += sizes[i];
    }
  };
}

Kernel make_transpose(const ir::Node& n) {
  const bool has_perm = n.has_attr("perm");
  const std::vector<int64_t> perm_attr = n.attr_ints("perm");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const size_t r = x.rank();
    const std::vector<int64_t> perm = transpose_perm(ctx.node(), has_perm, perm_attr, r);
    const auto in_strides = cpu::contiguous_strides(x.dims());
    std::vector<int64_t> out(r), strides(r);
    for (size_t i = 0; i < r; ++i) {
      out[i] = x.dims()[static_cast<size_t>(perm[i])];
      strides[i] = in_strides[static_cast<size_t>(perm[i])];
    }
    Tensor& y = ctx.alloc_output(0, x.dtype(), out);
    device_strided_copy(ctx.node(), x, 0, out, strides, y);
  };
}

/// Writes x, viewed with dims `view`, permuted by `perm` into output 0 of dims `out`.
void permute_into(KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& view,
                  const std::vector<int64_t>& perm, std::vector<int64_t> out) {
  const auto in_strides = cpu::contiguous_strides(view);
  std::vector<int64_t> dims(perm.size()), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = view[static_cast<size_t>(perm[i])];
    strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  Tensor& y = ctx.alloc_output(0, x.dtype(), std::move(out));
  device_strided_copy(ctx.node(), x, 0, dims, strides, y);
}

Kernel make_depth_to_space(const ir::Node& n) {
  const int64_t b = n.attr_int("blocksize", 0);
  if (b < 1) throw ModelError(n.describe() + ": DepthToSpace blocksize must be >= 1");
  const bool crd = n.attr_string("mode", "DCR") == "CRD";
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    if (x.rank() != 4 || x.dims()[1] % (b * b) != 0)
      throw ModelError(ctx.node().describe() + ": DepthToSpace needs [N,C,H,W] with C divisible by blocksize^2");
    const int64_t N = x.dims()[0], C = x.dims()[1] / (b * b), H = x.dims()[2], W = x.dims()[3];
    if (crd) permute_into(ctx, x, {N, C, b, b, H, W}, {0, 1, 4, 2, 5, 3}, {N, C, H * b, W * b});
    else permute_into(ctx, x, {N, b, b, C, H, W}, {0, 3, 4, 1, 5, 2}, {N, C, H * b, W * b});
  };
}

Kernel make_space_to_depth(const ir::Node& n) {
  const int64_t b = n.attr_int("blocksize", 0);
  if (b < 1) throw ModelError(n.describe() + ": SpaceToDepth blocksize must be >= 1");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    if (x.rank() != 4 || x.dims()[2] % b != 0 || x.dims()[3] % b != 0)
      throw ModelError(ctx.node().describe() + ": SpaceToDepth needs [N,C,H,W] with H and W divisible by blocksize");
    const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2] / b, W = x.dims()[3] / b;
    permute_into(ctx, x, {N, C, H, b, W, b}, {0, 3, 5, 1, 2, 4}, {N, C * b * b, H, W});
  };
}

std::string check_depth_mode(const ir::Node& n, std::span<const ir::DType>) {
  const std::string mode = n.attr_string("mode", "DCR");
  return mode == "DCR" || mode == "CRD" ? std::string() : "DepthToSpace mode " + mode;
}

void run_expand(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const auto shape = cpu::read_int_tensor(ctx.node(), ctx.in(1), "Expand shape");
  const auto out = cpu::broadcast_shapes(ctx.node(), x.dims(), shape);
  if (out == x.dims()) {
    ctx.set_output(0, x);
    return;
  }
  Tensor& y = ctx.alloc_output(0, x.dtype(), out);
  device_strided_copy(ctx.node(), x, 0, out, cpu::broadcast_strides(x.dims(), out), y);
}

void run_tile(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const auto reps = cpu::read_int_tensor(ctx.node(), ctx.in(1), "Tile repeats");
  const size_t r = x.rank();
  if (reps.size() != r)
    throw ModelError(ctx.node().describe() + ": Tile repeats must have one value per input dim");
  if (r > static_cast<size_t>(::mcc::cuda::kMaxCopyRank))
    throw ModelError(ctx.node().describe() + ": the cuda Tile handles rank <= 8");
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    if (reps[i] < 0) throw ModelError(ctx.node().describe() + ": Tile repeats are negative");
    if (__builtin_mul_overflow(x.dims()[i], reps[i], &out[i]))
      throw ModelError(ctx.node().describe() + ": Tile repeats overflow the output size");
  }
  Tensor& y = ctx.alloc_output(0, x.dtype(), out);
  if (y.numel() == 0) return;
  ::mcc::cuda::tile(x.device_data(), y.mutable_device_data(), static_cast<int>(r), x.dims().data(), out.data(),
                    elem_width(x.dtype()));
}

}  // namespace

void register_concat_split(OpTable& t) {
  t.add("Concat", 1, 0, make_concat, any_fixed_width());
  t.add("Split", 1, 0, make_split, any_fixed_width({0}), {1});
  t.add("Transpose", 1, 0, make_transpose, any_fixed_width({0}));
  t.add("DepthToSpace", 1, 0, make_depth_to_space, all_of({any_fixed_width({0}), check_depth_mode}));
  t.add("SpaceToDepth", 1, 0, make_space_to_depth, any_fixed_width({0}));
  t.add("Expand", 8, 0, stateless(run_expand), any_fixed_width({0}), {1});
  t.add("Tile", 6, 0, stateless(run_tile), all_of({any_fixed_width({0}), rank_at_most(0, 8)}), {1});
}

}  // namespace mcc::backends::cuda
