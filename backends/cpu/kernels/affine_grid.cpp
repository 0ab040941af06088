// AffineGrid (opset 20+): sampling grid for GridSample from a batch of affine matrices.
//   theta [N, 2, 3] with size [N, C, H, W]    -> grid [N, H, W, 2] (x, y)
//   theta [N, 3, 4] with size [N, C, D, H, W] -> grid [N, D, H, W, 3] (x, y, z)
// Base coordinates span [-1, 1]: align_corners=1 puts -1/1 on the corner pixel centres
// (-1 + 2i/(n-1); a size of 1 gives -1, as torch and ONNX's reference), align_corners=0 on the
// outer edges ((2i+1)/n - 1). Each output point is theta[n] x (x, y[, z], 1).
// dtypes: f32, f64, f16, bf16 theta; size i64. Accumulation: f64. Parallelised over N x rows.
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/kernel_registry.h"

namespace mcc::backends::cpu {
namespace {

std::vector<double> base_coords(int64_t n, bool align) {
  std::vector<double> c(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (align)
      c[static_cast<size_t>(i)] =
          n == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1);
    else
      c[static_cast<size_t>(i)] =
          (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n) - 1.0;
  }
  return c;
}

template <class T>
double ld(T v) {
  return static_cast<double>(static_cast<float>(v));
}
template <>
double ld<double>(double v) {
  return v;
}

Kernel make_affine_grid(const ir::Node& node) {
  const bool align = node.attr_int("align_corners", 0) != 0;
  return [align](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& theta = ctx.in(0);
    const auto size = read_int_tensor(n, ctx.in(1), "size");
    if (size.size() != 4 && size.size() != 5)
      throw ModelError(n.describe() + ": AffineGrid size must have 4 (2D) or 5 (3D) entries, got " +
                       std::to_string(size.size()));
    const bool is3d = size.size() == 5;
    const int64_t sd = is3d ? 3 : 2;  // spatial dims = output coordinates per point
    const int64_t N = size[0];
    for (int64_t v : size)
      if (v < 0) throw ModelError(n.describe() + ": AffineGrid size entries must be >= 0");
    const std::vector<int64_t> want{N, sd, sd + 1};
    if (theta.dims() != want)
      throw ModelError(n.describe() + ": AffineGrid theta must be [" + std::to_string(N) + ", " +
                       std::to_string(sd) + ", " + std::to_string(sd + 1) + "] for this size");
    const int64_t D = is3d ? size[2] : 1, H = size[is3d ? 3 : 2], W = size[is3d ? 4 : 3];
    std::vector<int64_t> out_dims{N};
    if (is3d) out_dims.push_back(D);
    out_dims.insert(out_dims.end(), {H, W, sd});
    ir::Tensor& grid = ctx.alloc_output(0, theta.dtype(), out_dims);
    const auto xs = base_coords(W, align), ys = base_coords(H, align), zs = base_coords(D, align);
    ir::dispatch<MCC_FLOAT_DTYPES>(theta.dtype(), n.describe() + ": AffineGrid", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* th = theta.data<T>().data();
      T* out = grid.mutable_data<T>().data();
      ctx.parallel_for(N * D * H, W * sd * 8, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t nb = r / (D * H), d = (r / H) % D, h = r % H;
          const T* m = th + nb * sd * (sd + 1);
          T* o = out + r * W * sd;
          for (int64_t w = 0; w < W; ++w) {
            const double p[4] = {xs[static_cast<size_t>(w)], ys[static_cast<size_t>(h)],
                                 is3d ? zs[static_cast<size_t>(d)] : 1.0, 1.0};
            for (int64_t k = 0; k < sd; ++k) {
              double acc = 0;
              for (int64_t j = 0; j < sd; ++j) acc += ld(m[k * (sd + 1) + j]) * p[j];
              acc += ld(m[k * (sd + 1) + sd]);
              o[w * sd + k] = static_cast<T>(
                  static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(acc));
            }
          }
        }
      });
    });
  };
}

}  // namespace

void register_affine_grid(KernelRegistry& r) { r.add("AffineGrid", 20, 0, make_affine_grid); }

}  // namespace mcc::backends::cpu
