// Linear-algebra kernels.
//   Det  opset 11, 22: determinant of square matrices [*, M, M] -> [*]
// dtypes: f32, f64, f16, bf16. Accumulation: f64 (LU decomposition with partial pivoting).
// Not supported: nothing known.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

double determinant(std::vector<double>& a, int64_t m) {
  double det = 1.0;
  for (int64_t k = 0; k < m; ++k) {
    int64_t piv = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::abs(a[i * m + k]) > std::abs(a[piv * m + k])) piv = i;
    if (a[piv * m + k] == 0.0) return 0.0;
    if (piv != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[piv * m + j]);
      det = -det;
    }
    const double d = a[k * m + k];
    det *= d;
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / d;
      if (f == 0.0) continue;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

void det_kernel(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": X", [](auto) {});
  const size_t r = x.rank();
  if (r < 2 || x.dims()[r - 1] != x.dims()[r - 2])
    throw ModelError(n.describe() + ": X must be [*, M, M], got " + misc::dims_str(x.dims()));
  const int64_t m = x.dims()[r - 1];
  std::vector<int64_t> od(x.dims().begin(), x.dims().end() - 2);
  int64_t batch = 1;
  for (int64_t d : od) batch *= d;
  const std::vector<double> v = misc::read_f64(n, x, "X");
  std::vector<double> out(static_cast<size_t>(batch));
  ctx.parallel_for(batch, m * m * m, [&](int64_t b0, int64_t b1) {
    std::vector<double> a;
    for (int64_t b = b0; b < b1; ++b) {
      a.assign(v.begin() + b * m * m, v.begin() + (b + 1) * m * m);
      out[b] = determinant(a, m);
    }
  });
  ir::Tensor& y = ctx.alloc_output(0, x.dtype(), od);
  misc::write_f64(n, y, out, "Y");
}

}  // namespace

void register_linalg(KernelRegistry& r) { r.add("Det", 11, 0, stateless(det_kernel)); }

}  // namespace mcc::backends::cpu
