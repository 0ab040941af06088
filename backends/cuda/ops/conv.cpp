// Conv (opset 1+) on the cuda backend: 1-3 spatial dims NC(DHW), group, strides, dilations, pads
// and auto_pad NOTSET/VALID/SAME_UPPER/SAME_LOWER, f32 or f16 (tensor cores, f32 accumulation).
// Paths: depthwise (group == input channels, one input channel per group) as a direct kernel;
// pointwise (1x1 kernel, stride 1, no padding) as one gemm per group batched over images reading
// X in place; everything else im2col into a scratch buffer (in chunks of images) then one gemm
// per group batched over the chunk. Bias and an optional fused activation run in the epilogue.
// Declined at plan time: other dtypes, mixed dtypes, unknown auto_pad values.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/kernels/depthwise_conv.h"
#include "backends/cuda/kernels/gemm_epilogue.h"
#include "backends/cuda/kernels/im2col.h"
#include "backends/cuda/ops/matrix_ops.h"
#include "backends/cuda/runtime/blas.h"
#include "backends/cuda/runtime/device_api.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cuda {

namespace dev = ::mcc::cuda;

namespace {

constexpr size_t kIm2colBudget = size_t{256} << 20;  // bytes of scratch per chunk of images

struct ConvAttrValues {
  int64_t group = 1;
  std::string auto_pad;
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
};

struct ConvShape {
  int64_t n = 0, c = 0, m = 0, group = 1;
  dev::ConvWindow win;
  std::vector<int64_t> out_dims;
};

void check_len(const ir::Node& node, const std::vector<int64_t>& v, size_t want, const char* what) {
  if (!v.empty() && v.size() != want)
    throw ModelError(node.describe() + ": " + what + " has " + std::to_string(v.size()) +
                     " values, expected " + std::to_string(want));
}

// Output size and begin pad of spatial dim i (window geometry already in win[j]).
void spatial_dim(const ir::Node& node, const ConvAttrValues& a, int nd, int i, dev::ConvWindow& w) {
  const int j = 3 - nd + i;
  const int64_t eff = (w.k[j] - 1) * w.dil[j] + 1, in = w.in[j], s = w.stride[j];
  if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
    w.out[j] = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (w.out[j] - 1) * s + eff - in);
    w.pad[j] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    return;
  }
  int64_t pb = 0, pe = 0;
  if (a.auto_pad != "VALID" && !a.pads.empty()) {
    pb = a.pads[static_cast<size_t>(i)];
    pe = a.pads[static_cast<size_t>(nd + i)];
    if (pb < 0 || pe < 0)
      throw ModelError(node.describe() + ": pads must be non-negative, got " + dims_text(a.pads));
  }
  const int64_t span = in + pb + pe - eff;
  if (span < 0)
    throw ModelError(node.describe() + ": the window (" + std::to_string(eff) +
                     ") is larger than the padded input (" + std::to_string(in + pb + pe) +
                     ") on spatial dim " + std::to_string(i));
  w.pad[j] = pb;
  w.out[j] = span / s + 1;
}

ConvShape conv_shape(const ir::Node& node, const ConvAttrValues& a, const std::vector<int64_t>& x,
                     const std::vector<int64_t>& w) {
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size())
    throw ModelError(node.describe() + ": Conv needs X and W of the same rank 3 to 5, got " +
                     dims_text(x) + " and " + dims_text(w));
  const int nd = static_cast<int>(x.size()) - 2;
  ConvShape s;
  s.n = x[0];
  s.c = x[1];
  s.m = w[0];
  s.group = a.group;
  if (s.group <= 0 || s.c % s.group != 0 || w[1] * s.group != s.c || s.m % s.group != 0)
    throw ModelError(node.describe() + ": X " + dims_text(x) + " and W " + dims_text(w) +
                     " do not fit group " + std::to_string(s.group));
  const std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (!a.kernel_shape.empty() && a.kernel_shape != kernel)
    throw ModelError(node.describe() + ": kernel_shape " + dims_text(a.kernel_shape) +
                     " differs from W's spatial dims " + dims_text(kernel));
  check_len(node, a.strides, static_cast<size_t>(nd), "strides");
  check_len(node, a.dilations, static_cast<size_t>(nd), "dilations");
  check_len(node, a.pads, static_cast<size_t>(2 * nd), "pads");
  s.out_dims = {s.n, s.m};
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    const size_t u = static_cast<size_t>(i);
    s.win.in[j] = x[2 + u];
    s.win.k[j] = kernel[u];
    s.win.stride[j] = a.strides.empty() ? 1 : a.strides[u];
    s.win.dil[j] = a.dilations.empty() ? 1 : a.dilations[u];
    if (s.win.k[j] <= 0 || s.win.stride[j] <= 0 || s.win.dil[j] <= 0)
      throw ModelError(node.describe() + ": kernel dims, strides and dilations must be positive");
    spatial_dim(node, a, nd, i, s.win);
    s.out_dims.push_back(s.win.out[j]);
  }
  return s;
}

bool is_pointwise(const dev::ConvWindow& w) {
  for (int j = 0; j < 3; ++j)
    if (w.k[j] != 1 || w.stride[j] != 1 || w.pad[j] != 0 || w.out[j] != w.in[j]) return false;
  return true;
}

// Y = W * cols per group, batched over `images` images whose column matrices are `cols_stride`
// elements apart (the rows of group g start at row g * Kg).
void gemm_groups(dev::GemmType type, size_t elem, const ConvShape& s, const std::byte* w,
                 const std::byte* cols, int64_t cols_stride, int64_t images, std::byte* y) {
  const int64_t P = s.win.out_size(), Mg = s.m / s.group, Kg = s.c / s.group * s.win.k_size();
  for (int64_t g = 0; g < s.group; ++g)
    dev::gemm(type, false, false, Mg, P, Kg, 1.f, w + static_cast<size_t>(g * Mg * Kg) * elem, Kg,
              0, cols + static_cast<size_t>(g * Kg * P) * elem, P, cols_stride, 0.f,
              y + static_cast<size_t>(g * Mg * P) * elem, P, s.m * P, images);
}

void run_im2col(KernelContext& ctx, dev::GemmType type, size_t elem, const ConvShape& s,
                const std::byte* x, const std::byte* w, std::byte* y) {
  const int64_t rows = s.c * s.win.k_size(), P = s.win.out_size();
  const size_t per_image = static_cast<size_t>(rows * P) * elem;
  const int64_t chunk =
      std::clamp<int64_t>(static_cast<int64_t>(kIm2colBudget / std::max<size_t>(per_image, 1)), 1, s.n);
  auto scratch = ctx.backend().allocate(per_image * static_cast<size_t>(chunk));
  auto* cols = reinterpret_cast<std::byte*>(scratch->mutable_data());
  const int64_t x_image = s.c * s.win.in_size();
  for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
    const int64_t count = std::min(chunk, s.n - n0);
    dev::im2col(type, x + static_cast<size_t>(n0 * x_image) * elem, x_image, count, s.c, s.win, cols);
    gemm_groups(type, elem, s, w, cols, rows * P, count, y + static_cast<size_t>(n0 * s.m * P) * elem);
  }
}

void run_conv(KernelContext& ctx, const ConvAttrValues& a, const dev::Activation& act) {
  const ir::Node& node = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  const ir::Tensor& w = ctx.in(1);
  const ConvShape s = conv_shape(node, a, x.dims(), w.dims());
  const bool has_bias = ctx.has_input(2);
  if (has_bias && ctx.in(2).numel() != s.m)
    throw ModelError(node.describe() + ": B must have " + std::to_string(s.m) + " values, got " +
                     std::to_string(ctx.in(2).numel()));
  ir::Tensor& y = ctx.alloc_output(0, x.dtype(), s.out_dims);
  if (y.numel() == 0) return;
  const dev::GemmType type = gemm_type(x.dtype());
  const size_t elem = ir::dtype_size(x.dtype());
  const auto* xp = static_cast<const std::byte*>(x.device_data());
  const auto* wp = static_cast<const std::byte*>(w.device_data());
  auto* yp = static_cast<std::byte*>(y.mutable_device_data());
  const int64_t cg = s.c / s.group;
  if (cg == 0) {
    dev::fill_zero(yp, static_cast<size_t>(y.numel()) * elem);
  } else if (cg == 1 && s.group == s.c) {
    dev::depthwise_conv(type, xp, wp, yp, s.n, s.c, s.m, s.win);
  } else if (is_pointwise(s.win)) {
    gemm_groups(type, elem, s, wp, xp, s.c * s.win.in_size(), s.n, yp);
  } else {
    run_im2col(ctx, type, elem, s, xp, wp, yp);
  }
  dev::bias_activation(type, yp, s.n, s.m, s.win.out_size(),
                       has_bias ? ctx.in(2).device_data() : nullptr, act);
}

}  // namespace

std::string conv_check(const ir::Node& n, std::span<const ir::DType> dtypes) {
  if (std::string why = same_float_inputs(n, dtypes); !why.empty()) return why;
  const std::string pad = ir::ConvAttrs(n).auto_pad();
  if (pad != "NOTSET" && pad != "VALID" && pad != "SAME_UPPER" && pad != "SAME_LOWER")
    return "auto_pad " + pad;
  if (!n.inputs.empty() && n.inputs[0] && n.inputs[0]->shape.rank_known()) {
    const size_t rank = n.inputs[0]->shape.rank();
    if (rank < 3 || rank > 5) return "Conv input of rank " + std::to_string(rank);
  }
  return {};
}

Kernel make_conv_kernel(const ir::Node& n, dev::Activation act) {
  const ir::ConvAttrs ca(n);
  ConvAttrValues a;
  a.group = ca.group();
  a.auto_pad = ca.auto_pad();
  a.kernel_shape = ca.kernel_shape();
  a.strides = ca.strides();
  a.dilations = ca.dilations();
  a.pads = ca.pads();
  return [a, act](KernelContext& ctx) { run_conv(ctx, a, act); };
}

void register_conv(OpTable& t) {
  t.add("Conv", 1, 0, [](const ir::Node& n) { return make_conv_kernel(n, {}); }, conv_check);
}

}  // namespace mcc::backends::cuda
