// DeformConv (opsets 19, 22): 2-D deformable convolution with groups, offset_group, strides,
// dilations, pads, optional bias and optional modulation mask.
// dtypes: f32, f64 (native), f16, bf16 (computed in f32).
// Algorithm: per image, a deformable im2col (each tap samples X bilinearly at its offset position,
// zero outside the image, as GridSample with align_corners=1 and zero padding, then is scaled by
// the mask), parallel over input channels, then one Eigen GEMM per group.
// Not supported: 1-D and 3-D inputs.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/nn_register.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cpu {

namespace {

template <class A>
A bilinear(const A* plane, int64_t H, int64_t W, A h, A w) {
  const A hf = std::floor(h), wf = std::floor(w);
  const auto h0 = static_cast<int64_t>(hf), w0 = static_cast<int64_t>(wf);
  const A lh = h - hf, lw = w - wf;
  auto at = [&](int64_t y, int64_t x) {
    return (y >= 0 && y < H && x >= 0 && x < W) ? plane[y * W + x] : A(0);
  };
  return (1 - lh) * ((1 - lw) * at(h0, w0) + lw * at(h0, w0 + 1)) +
         lh * ((1 - lw) * at(h0 + 1, w0) + lw * at(h0 + 1, w0 + 1));
}

template <class A>
void deform_conv_run(const KernelContext& ctx, const ConvProblem& p, int64_t offset_group,
                     const A* x, const A* w, const A* offset, const A* mask, const A* bias, A* y) {
  const WindowGeom& g = p.g;
  const int64_t C = p.c, M = p.m, G = p.group, cg = C / G, mg = M / G;
  const int64_t H = g.in[1], W = g.in[2], KH = g.k[1], KW = g.k[2], ks = KH * KW;
  const int64_t OH = g.out[1], OW = g.out[2], P = OH * OW, cpo = C / offset_group;
  std::vector<A> col(static_cast<size_t>(C * ks * P));
  for (int64_t ni = 0; ni < p.n; ++ni) {
    ctx.parallel_for(C, ks * P * 8, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const int64_t og = c / cpo;
        const A* plane = x + (ni * C + c) * H * W;
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t tap = kh * KW + kw;
            const A* off_h = offset + ((ni * offset_group + og) * ks * 2 + tap * 2) * P;
            const A* off_w = off_h + P;
            const A* mk = mask ? mask + ((ni * offset_group + og) * ks + tap) * P : nullptr;
            A* dst = col.data() + (c * ks + tap) * P;
            for (int64_t i = 0; i < OH; ++i)
              for (int64_t j = 0; j < OW; ++j) {
                const int64_t q = i * OW + j;
                const A h = static_cast<A>(i * g.stride[1] - g.pad_b[1] + kh * g.dil[1]) + off_h[q];
                const A wv =
                    static_cast<A>(j * g.stride[2] - g.pad_b[2] + kw * g.dil[2]) + off_w[q];
                A v = bilinear(plane, H, W, h, wv);
                if (mk) v *= mk[q];
                dst[q] = v;
              }
          }
      }
    });
    for (int64_t gi = 0; gi < G; ++gi)
      gemm_parallel<A>(ctx, mg, P, cg * ks, w + gi * mg * cg * ks, cg * ks, false,
                       col.data() + gi * cg * ks * P, P, false, y + (ni * M + gi * mg) * P, P,
                       false);
    if (bias)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t q = 0; q < P; ++q) y[(ni * M + m) * P + q] += bias[m];
  }
}

Kernel make_deform_conv(const ir::Node& node) {
  const WindowAttrs attrs = WindowAttrs::parse(node);
  const ir::ConvAttrs c(node);
  const int64_t group = c.group(), offset_group = c.offset_group();
  if (offset_group <= 0) throw ModelError(node.describe() + ": offset_group must be positive");
  return [attrs, group, offset_group](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const ir::Tensor& w = ctx.in(1);
    const ir::Tensor& off = ctx.in(2);
    if (x.rank() != 4)
      throw UnsupportedError(n.describe() +
                             ": DeformConv supports 2-D inputs (rank 4) only, got rank " +
                             std::to_string(x.rank()));
    const ConvProblem p = conv_problem(n, attrs, group, x.dims(), w.dims());
    const int64_t ks = p.g.k_size();
    if (p.c % offset_group != 0)
      throw ModelError(n.describe() + ": channels must be divisible by offset_group");
    if (off.dims() != std::vector<int64_t>{p.n, offset_group * ks * 2, p.g.out[1], p.g.out[2]})
      throw ModelError(n.describe() +
                       ": offset shape does not match offset_group, kernel and output size");
    const bool has_b = ctx.has_input(3), has_m = ctx.has_input(4);
    if (has_b && ctx.in(3).numel() != p.m)
      throw ModelError(n.describe() + ": B must have one value per output channel");
    if (has_m && ctx.in(4).numel() != p.n * offset_group * ks * p.g.out_size())
      throw ModelError(n.describe() +
                       ": mask shape does not match offset_group, kernel and output size");
    for (size_t i = 1; i < 5; ++i)
      if (ctx.has_input(i) && ctx.in(i).dtype() != x.dtype())
        throw ModelError(n.describe() + ": all inputs must have X's dtype");
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), p.g.out_dims(p.n, p.m));
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": DeformConv", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
      auto view = [](const ir::Tensor& t) {
        std::vector<A> v;
        v.reserve(static_cast<size_t>(t.numel()));
        for (T e : t.data<T>()) v.push_back(static_cast<A>(e));
        return v;
      };
      const auto xv = view(x), wv = view(w), ov = view(off);
      const auto bv = has_b ? view(ctx.in(3)) : std::vector<A>{};
      const auto mv = has_m ? view(ctx.in(4)) : std::vector<A>{};
      std::vector<A> yv(static_cast<size_t>(y.numel()));
      deform_conv_run<A>(ctx, p, offset_group, xv.data(), wv.data(), ov.data(),
                         has_m ? mv.data() : nullptr, has_b ? bv.data() : nullptr, yv.data());
      auto yo = y.mutable_data<T>();
      for (size_t i = 0; i < yv.size(); ++i) yo[i] = static_cast<T>(yv[i]);
    });
  };
}

}  // namespace

void register_deform_conv(KernelRegistry& r) { r.add("DeformConv", 19, 0, make_deform_conv); }

}  // namespace mcc::backends::cpu
