// Window geometry and the parallel GEMM shared by the conv, gemm and pooling kernels
// (see conv_util.h).
#include "backends/cpu/kernels/conv_util.h"

#include <Eigen/Core>
#include <algorithm>

#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cpu {

namespace {
std::string dims_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace

WindowAttrs WindowAttrs::parse(const ir::Node& n) {
  const ir::ConvAttrs c(n);
  WindowAttrs a;
  a.auto_pad = c.auto_pad();
  if (a.auto_pad.empty()) a.auto_pad = "NOTSET";
  if (a.auto_pad != "NOTSET" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER" &&
      a.auto_pad != "VALID")
    throw ModelError(n.describe() +
                     ": auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" +
                     a.auto_pad + "'");
  a.kernel_shape = c.kernel_shape();
  a.strides = c.strides();
  a.dilations = c.dilations();
  a.pads = c.pads();
  a.ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  for (int64_t s : a.strides)
    if (s <= 0)
      throw ModelError(n.describe() + ": strides must be positive, got " + dims_str(a.strides));
  for (int64_t d : a.dilations)
    if (d <= 0)
      throw ModelError(n.describe() + ": dilations must be positive, got " + dims_str(a.dilations));
  for (int64_t k : a.kernel_shape)
    if (k <= 0)
      throw ModelError(n.describe() + ": kernel_shape must be positive, got " +
                       dims_str(a.kernel_shape));
  return a;
}

std::vector<int64_t> WindowGeom::out_dims(int64_t n, int64_t c) const {
  std::vector<int64_t> d{n, c};
  for (int i = 3 - nd; i < 3; ++i) d.push_back(out[i]);
  return d;
}

WindowGeom conv_geometry(const ir::Node& n, const WindowAttrs& a,
                         const std::vector<int64_t>& x_dims, const std::vector<int64_t>& kernel,
                         bool is_pool) {
  if (x_dims.size() < 3)
    throw ModelError(n.describe() + ": input must have rank >= 3 (N, C, spatial...), got shape " +
                     dims_str(x_dims));
  const int nd = static_cast<int>(x_dims.size()) - 2;
  if (nd > 3)
    throw UnsupportedError(n.describe() + ": " + n.op_type + " with " + std::to_string(nd) +
                           " spatial dims is not supported by the cpu backend (at most 3)");
  if (static_cast<int>(kernel.size()) != nd)
    throw ModelError(n.describe() + ": kernel has " + std::to_string(kernel.size()) +
                     " dims, input has " + std::to_string(nd) + " spatial dims");
  auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* what) {
    if (!v.empty() && v.size() != want)
      throw ModelError(n.describe() + ": " + what + " has " + std::to_string(v.size()) +
                       " values, expected " + std::to_string(want));
  };
  check_len(a.strides, nd, "strides");
  check_len(a.dilations, nd, "dilations");
  check_len(a.pads, 2 * nd, "pads");
  WindowGeom g;
  g.nd = nd;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    g.in[j] = x_dims[2 + i];
    g.k[j] = kernel[i];
    if (g.k[j] <= 0)
      throw ModelError(n.describe() + ": kernel dims must be positive, got " + dims_str(kernel));
    g.stride[j] = a.strides.empty() ? 1 : a.strides[i];
    g.dil[j] = a.dilations.empty() ? 1 : a.dilations[i];
    const int64_t eff = (g.k[j] - 1) * g.dil[j] + 1;
    const int64_t in = g.in[j], s = g.stride[j];
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      g.out[j] = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (g.out[j] - 1) * s + eff - in);
      const int64_t small = total / 2;
      g.pad_b[j] = a.auto_pad == "SAME_UPPER" ? small : total - small;
      g.pad_e[j] = total - g.pad_b[j];
    } else {
      if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
        g.pad_b[j] = a.pads[i];
        g.pad_e[j] = a.pads[nd + i];
        if (g.pad_b[j] < 0 || g.pad_e[j] < 0)
          throw ModelError(n.describe() + ": pads must be non-negative, got " + dims_str(a.pads));
      }
      const int64_t span = in + g.pad_b[j] + g.pad_e[j] - eff;
      if (span < 0)
        throw ModelError(n.describe() + ": the window (" + std::to_string(eff) +
                         ") is larger than the padded input (" +
                         std::to_string(in + g.pad_b[j] + g.pad_e[j]) + ") on spatial dim " +
                         std::to_string(i));
      if (is_pool && a.ceil_mode) {
        g.out[j] = (span + s - 1) / s + 1;
        // The last window must start inside the input or the begin padding.
        if ((g.out[j] - 1) * s >= in + g.pad_b[j]) --g.out[j];
      } else {
        g.out[j] = span / s + 1;
      }
    }
    if (g.out[j] <= 0)
      throw ModelError(n.describe() + ": output spatial dim " + std::to_string(i) +
                       " would be empty");
  }
  return g;
}

template <class T>
void gemm_parallel(const KernelContext& ctx, int64_t M, int64_t N, int64_t K, const T* A,
                   int64_t lda, bool trans_a, const T* B, int64_t ldb, bool trans_b, T* C,
                   int64_t ldc, bool accumulate) {
  using RM = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using CMap = Eigen::Map<const RM, 0, Eigen::OuterStride<>>;
  using OMap = Eigen::Map<RM, 0, Eigen::OuterStride<>>;
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, T(0));
    return;
  }
  // One product on rows [r0, r1) and columns [c0, c1) of C.
  auto block = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const int64_t mr = r1 - r0, nc = c1 - c0;
    OMap Cm(C + r0 * ldc + c0, mr, nc, Eigen::OuterStride<>(ldc));
    auto run = [&](const auto& a, const auto& b) {
      if (accumulate)
        Cm.noalias() += a * b;
      else
        Cm.noalias() = a * b;
    };
    const T* a0 = trans_a ? A + r0 : A + r0 * lda;
    const T* b0 = trans_b ? B + c0 * ldb : B + c0;
    if (!trans_a && !trans_b)
      run(CMap(a0, mr, K, Eigen::OuterStride<>(lda)), CMap(b0, K, nc, Eigen::OuterStride<>(ldb)));
    else if (trans_a && !trans_b)
      run(CMap(a0, K, mr, Eigen::OuterStride<>(lda)).transpose(),
          CMap(b0, K, nc, Eigen::OuterStride<>(ldb)));
    else if (!trans_a && trans_b)
      run(CMap(a0, mr, K, Eigen::OuterStride<>(lda)),
          CMap(b0, nc, K, Eigen::OuterStride<>(ldb)).transpose());
    else
      run(CMap(a0, K, mr, Eigen::OuterStride<>(lda)).transpose(),
          CMap(b0, nc, K, Eigen::OuterStride<>(ldb)).transpose());
  };
  const int64_t threads = std::max(1, ctx.num_threads());
  const bool split_rows = M >= N;
  const int64_t dim = split_rows ? M : N;
  constexpr int64_t kMinBlock = 16;
  const int64_t blocks = std::max<int64_t>(1, std::min(threads, dim / kMinBlock));
  const int64_t step = (dim + blocks - 1) / blocks;
  ctx.parallel_for(blocks, M * N * K / blocks + 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t lo = i * step, hi = std::min(dim, lo + step);
      if (lo >= hi) continue;
      if (split_rows)
        block(lo, hi, 0, N);
      else
        block(0, M, lo, hi);
    }
  });
}

template void gemm_parallel<float>(const KernelContext&, int64_t, int64_t, int64_t, const float*,
                                   int64_t, bool, const float*, int64_t, bool, float*, int64_t,
                                   bool);
template void gemm_parallel<double>(const KernelContext&, int64_t, int64_t, int64_t, const double*,
                                    int64_t, bool, const double*, int64_t, bool, double*, int64_t,
                                    bool);
template void gemm_parallel<int32_t>(const KernelContext&, int64_t, int64_t, int64_t,
                                     const int32_t*, int64_t, bool, const int32_t*, int64_t, bool,
                                     int32_t*, int64_t, bool);
template void gemm_parallel<int64_t>(const KernelContext&, int64_t, int64_t, int64_t,
                                     const int64_t*, int64_t, bool, const int64_t*, int64_t, bool,
                                     int64_t*, int64_t, bool);
template void gemm_parallel<uint32_t>(const KernelContext&, int64_t, int64_t, int64_t,
                                      const uint32_t*, int64_t, bool, const uint32_t*, int64_t,
                                      bool, uint32_t*, int64_t, bool);
template void gemm_parallel<uint64_t>(const KernelContext&, int64_t, int64_t, int64_t,
                                      const uint64_t*, int64_t, bool, const uint64_t*, int64_t,
                                      bool, uint64_t*, int64_t, bool);

}  // namespace mcc::backends::cpu
