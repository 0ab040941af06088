// ConvTranspose (ONNX opsets 1, 11, 22): 1-D/2-D/3-D, groups, strides, dilations, pads,
// output_padding, output_shape, auto_pad SAME_UPPER/SAME_LOWER/VALID, optional bias.
// dtypes: f32, f64 (native), f16, bf16 (computed and accumulated in f32).
// Algorithm: per image and group, col = W_g^T * X_g with Eigen GEMM (split over the pool), then
// col2im scatter-add, parallel over output channels. Pads derived from output_shape may be
// negative (the output then extends past the last full window), as in the ONNX reference.
// Col2Im (opset 18): the same col2im scatter on 1-3 spatial dims; float dtypes as above.
// Not supported: more than 3 spatial dims.
#include <Eigen/Core>
#include <algorithm>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/nn_register.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cpu {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

struct ConvTransposeAttrs {
  WindowAttrs w;
  int64_t group = 1;
  std::vector<int64_t> output_padding, output_shape;
};

// Geometry with `in` = the ConvTranspose input and `out` = its output.
WindowGeom transpose_geometry(const ir::Node& n, const ConvTransposeAttrs& a,
                              const std::vector<int64_t>& xd, const std::vector<int64_t>& kernel) {
  const int nd = static_cast<int>(xd.size()) - 2;
  if (nd < 1) throw ModelError(n.describe() + ": X must have rank >= 3");
  if (nd > 3)
    throw UnsupportedError(n.describe() +
                           ": ConvTranspose with more than 3 spatial dims is not supported");
  auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* what) {
    if (!v.empty() && v.size() != want)
      throw ModelError(n.describe() + ": " + what + " has " + std::to_string(v.size()) +
                       " values, expected " + std::to_string(want));
  };
  check_len(a.w.strides, nd, "strides");
  check_len(a.w.dilations, nd, "dilations");
  check_len(a.w.pads, 2 * nd, "pads");
  check_len(a.output_padding, nd, "output_padding");
  std::vector<int64_t> out_shape = a.output_shape;
  if (out_shape.size() == static_cast<size_t>(nd) + 2)
    out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  check_len(out_shape, nd, "output_shape");
  WindowGeom g;
  g.nd = nd;
  const bool same = a.w.auto_pad == "SAME_UPPER" || a.w.auto_pad == "SAME_LOWER";
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    g.in[j] = xd[2 + i];
    g.k[j] = kernel[i];
    g.stride[j] = a.w.strides.empty() ? 1 : a.w.strides[i];
    g.dil[j] = a.w.dilations.empty() ? 1 : a.w.dilations[i];
    const int64_t op = a.output_padding.empty() ? 0 : a.output_padding[i];
    const int64_t full = g.stride[j] * (g.in[j] - 1) + op + (g.k[j] - 1) * g.dil[j] + 1;
    if (!out_shape.empty() || (same && a.w.pads.empty())) {
      g.out[j] = out_shape.empty() ? g.in[j] * g.stride[j] : out_shape[i];
      const int64_t total = full - g.out[j];
      if (a.w.auto_pad == "SAME_UPPER") {
        g.pad_b[j] = floor_div(total, 2);
        g.pad_e[j] = total - g.pad_b[j];
      } else {
        g.pad_e[j] = floor_div(total, 2);
        g.pad_b[j] = total - g.pad_e[j];
      }
    } else {
      if (!a.w.pads.empty() && a.w.auto_pad != "VALID") {
        g.pad_b[j] = a.w.pads[i];
        g.pad_e[j] = a.w.pads[nd + i];
      }
      g.out[j] = full - g.pad_b[j] - g.pad_e[j];
    }
    if (g.out[j] <= 0)
      throw ModelError(n.describe() + ": ConvTranspose output spatial dim " + std::to_string(i) +
                       " would be empty");
  }
  return g;
}

// y[m] (+)= scatter of col rows (m * ks + tap) over the output plane, for one channel.
template <class T>
void col2im_channel(const WindowGeom& g, const T* col, int64_t P, T* y) {
  int64_t tap = 0;
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw, ++tap) {
        const T* c = col + tap * P;
        for (int64_t id = 0; id < g.in[0]; ++id) {
          const int64_t od = id * g.stride[0] - g.pad_b[0] + kd * g.dil[0];
          if (od < 0 || od >= g.out[0]) continue;
          for (int64_t ih = 0; ih < g.in[1]; ++ih) {
            const int64_t oh = ih * g.stride[1] - g.pad_b[1] + kh * g.dil[1];
            if (oh < 0 || oh >= g.out[1]) continue;
            T* yr = y + (od * g.out[1] + oh) * g.out[2];
            const T* cr = c + (id * g.in[1] + ih) * g.in[2];
            const int64_t off = kw * g.dil[2] - g.pad_b[2], s = g.stride[2];
            for (int64_t iw = 0; iw < g.in[2]; ++iw) {
              const int64_t ow = iw * s + off;
              if (ow >= 0 && ow < g.out[2]) yr[ow] += cr[iw];
            }
          }
        }
      }
}

template <class T>
void conv_transpose_run(const KernelContext& ctx, const WindowGeom& g, int64_t N, int64_t C,
                        int64_t M, int64_t G, const T* x, const T* w, const T* bias, T* y) {
  const int64_t cg = C / G, mg = M / G, ks = g.k_size(), P = g.in_size(), OP = g.out_size();
  std::vector<T> col(static_cast<size_t>(mg * ks * P));
  for (int64_t ni = 0; ni < N; ++ni)
    for (int64_t gi = 0; gi < G; ++gi) {
      // col[(m, tap), p] = sum_c W[c, m, tap] * X[c, p]: W_g is stored [cg, mg * ks].
      gemm_parallel<T>(ctx, mg * ks, P, cg, w + gi * cg * mg * ks, mg * ks, true,
                       x + (ni * C + gi * cg) * P, P, false, col.data(), P, false);
      ctx.parallel_for(mg, ks * P, [&](int64_t b, int64_t e) {
        for (int64_t m = b; m < e; ++m) {
          T* yc = y + (ni * M + gi * mg + m) * OP;
          col2im_channel(g, col.data() + m * ks * P, P, yc);
          if (bias) {
            const T bv = bias[gi * mg + m];
            for (int64_t j = 0; j < OP; ++j) yc[j] += bv;
          }
        }
      });
    }
}

Kernel make_conv_transpose(const ir::Node& node) {
  ConvTransposeAttrs a;
  a.w = WindowAttrs::parse(node);
  const ir::ConvAttrs c(node);
  a.group = c.group();
  a.output_padding = c.output_padding();
  a.output_shape = c.output_shape();
  if (a.group <= 0) throw ModelError(node.describe() + ": group must be positive");
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const ir::Tensor& w = ctx.in(1);
    const bool has_b = ctx.has_input(2);
    if (w.dtype() != x.dtype() || (has_b && ctx.in(2).dtype() != x.dtype()))
      throw ModelError(n.describe() + ": X, W and B must have the same dtype");
    const auto& xd = x.dims();
    const auto& wd = w.dims();
    if (xd.size() < 3 || wd.size() != xd.size())
      throw ModelError(n.describe() + ": X and W must have the same rank >= 3");
    const int64_t N = xd[0], C = xd[1], M = wd[1] * a.group;
    if (wd[0] != C || C % a.group != 0)
      throw ModelError(n.describe() + ": W's first dim (" + std::to_string(wd[0]) +
                       ") must equal X's channels (" + std::to_string(C) +
                       ") and be divisible by group");
    const std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
    if (!a.w.kernel_shape.empty() && a.w.kernel_shape != kernel)
      throw ModelError(n.describe() + ": kernel_shape does not match W");
    if (has_b && ctx.in(2).numel() != M)
      throw ModelError(n.describe() + ": B must have " + std::to_string(M) + " values");
    const WindowGeom g = transpose_geometry(n, a, xd, kernel);
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), g.out_dims(N, M));
    ir::dispatch<ir::DType::F32, ir::DType::F64, ir::DType::F16, ir::DType::BF16>(
        x.dtype(), n.describe() + ": ConvTranspose", [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
            auto yo = y.mutable_data<T>();
            std::fill(yo.begin(), yo.end(), T(0));
            conv_transpose_run<T>(ctx, g, N, C, M, a.group, x.data<T>().data(), w.data<T>().data(),
                                  has_b ? ctx.in(2).data<T>().data() : nullptr, yo.data());
          } else {
            auto conv = [](const ir::Tensor& t) {
              std::vector<float> v;
              for (T e : t.data<T>()) v.push_back(static_cast<float>(e));
              return v;
            };
            const auto xf = conv(x), wf = conv(w);
            const auto bf = has_b ? conv(ctx.in(2)) : std::vector<float>{};
            std::vector<float> yf(static_cast<size_t>(y.numel()), 0.f);
            conv_transpose_run<float>(ctx, g, N, C, M, a.group, xf.data(), wf.data(),
                                      has_b ? bf.data() : nullptr, yf.data());
            auto yo = y.mutable_data<T>();
            for (size_t i = 0; i < yf.size(); ++i) yo[i] = T(yf[i]);
          }
        });
  };
}

// Col2Im: input [N, C * prod(block), L] scattered into [N, C, image...]; the block grid is the
// conv output grid of the image under (block, strides, dilations, pads).
void col2im_kernel(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  const auto image = read_int_tensor(n, ctx.in(1), "image_shape");
  const auto block = read_int_tensor(n, ctx.in(2), "block_shape");
  const auto nd = static_cast<int>(image.size());
  if (nd < 1 || nd > 3 || block.size() != image.size())
    throw ModelError(n.describe() +
                     ": image_shape and block_shape must have the same length (1 to 3)");
  const WindowAttrs a = WindowAttrs::parse(n);
  if ((!a.strides.empty() && a.strides.size() != image.size()) ||
      (!a.dilations.empty() && a.dilations.size() != image.size()) ||
      (!a.pads.empty() && a.pads.size() != 2 * image.size()))
    throw ModelError(n.describe() +
                     ": strides, dilations and pads must match image_shape's length");
  if (x.rank() != 3)
    throw ModelError(n.describe() + ": input must be [N, C * prod(block_shape), L]");
  WindowGeom g;
  g.nd = nd;
  int64_t ks = 1, L = 1;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    g.out[j] = image[i];
    g.k[j] = block[i];
    g.stride[j] = a.strides.empty() ? 1 : a.strides[i];
    g.dil[j] = a.dilations.empty() ? 1 : a.dilations[i];
    g.pad_b[j] = a.pads.empty() ? 0 : a.pads[i];
    g.pad_e[j] = a.pads.empty() ? 0 : a.pads[nd + i];
    const int64_t span = image[i] + g.pad_b[j] + g.pad_e[j] - (block[i] - 1) * g.dil[j] - 1;
    if (block[i] <= 0 || image[i] <= 0 || span < 0)
      throw ModelError(n.describe() + ": block_shape does not fit image_shape");
    g.in[j] = span / g.stride[j] + 1;
    ks *= block[i];
    L *= g.in[j];
  }
  const int64_t N = x.dims()[0];
  if (ks == 0 || x.dims()[1] % ks != 0 || x.dims()[2] != L)
    throw ModelError(n.describe() + ": input dims do not match block_shape and the block count " +
                     std::to_string(L));
  const int64_t C = x.dims()[1] / ks;
  std::vector<int64_t> od{N, C};
  od.insert(od.end(), image.begin(), image.end());
  ir::Tensor& y = ctx.alloc_output(0, x.dtype(), od);
  ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": Col2Im", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const auto xs = x.data<T>();
    auto ys = y.mutable_data<T>();
    const int64_t OP = g.out_size();
    ctx.parallel_for(N * C, ks * L, [&](int64_t b, int64_t e) {
      std::vector<A> col(static_cast<size_t>(ks * L)), out(static_cast<size_t>(OP));
      for (int64_t pl = b; pl < e; ++pl) {
        for (size_t i = 0; i < col.size(); ++i)
          col[i] = static_cast<A>(xs[static_cast<size_t>(pl * ks * L) + i]);
        std::fill(out.begin(), out.end(), A(0));
        col2im_channel(g, col.data(), L, out.data());
        for (int64_t i = 0; i < OP; ++i)
          ys[static_cast<size_t>(pl * OP + i)] = static_cast<T>(out[static_cast<size_t>(i)]);
      }
    });
  });
}

}  // namespace

void register_conv_transpose(KernelRegistry& r) {
  r.add("ConvTranspose", 1, 0, make_conv_transpose);
  r.add("Col2Im", 18, 0, stateless(col2im_kernel));
}

}  // namespace mcc::backends::cpu
