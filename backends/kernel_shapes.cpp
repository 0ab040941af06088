// Shared argument checks and output shapes of kernels (see kernel_shapes.h).
#include "backends/kernel_shapes.h"
#include "ir/dims_text.h"

#include <algorithm>
#include <limits>

#include "ir/errors.h"

namespace mcc::backends {

std::string dims_text(const std::vector<int64_t>& d) { return ir::dims_text(d); }

std::vector<int64_t> MatMulOperands::out_dims(const std::vector<int64_t>& batch) const {
  std::vector<int64_t> out = batch;
  if (!a_vector) out.push_back(M);
  if (!b_vector) out.push_back(N);
  return out;
}

MatMulOperands matmul_operands(const ir::Node& n, std::vector<int64_t> a, std::vector<int64_t> b) {
  if (a.empty() || b.empty()) throw ModelError(n.describe() + ": MatMul operands must have rank >= 1");
  MatMulOperands o;
  o.a_vector = a.size() == 1;
  o.b_vector = b.size() == 1;
  if (o.a_vector) a.insert(a.begin(), 1);
  if (o.b_vector) b.push_back(1);
  o.M = a[a.size() - 2];
  o.K = a.back();
  o.N = b.back();
  if (b[b.size() - 2] != o.K)
    throw ModelError(n.describe() + ": MatMul inner dims differ: A " + dims_text(a) + ", B " + dims_text(b));
  o.a = std::move(a);
  o.b = std::move(b);
  return o;
}

GemmDims gemm_dims(const ir::Node& n, const std::vector<int64_t>& a, const std::vector<int64_t>& b, bool ta, bool tb) {
  if (a.size() != 2 || b.size() != 2)
    throw ModelError(n.describe() + ": Gemm needs 2-D A and B, got " + dims_text(a) + " and " + dims_text(b));
  GemmDims g;
  g.M = ta ? a[1] : a[0];
  g.K = ta ? a[0] : a[1];
  g.N = tb ? b[0] : b[1];
  const int64_t kb = tb ? b[1] : b[0];
  if (g.K != kb)
    throw ModelError(n.describe() + ": Gemm inner dims differ: A " + dims_text(a) + ", B " + dims_text(b));
  return g;
}

std::pair<int64_t, int64_t> shape_range(int64_t r, int64_t start, bool has_end, int64_t end) {
  auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
  const int64_t s = clamp(start), e = has_end ? clamp(end) : r;
  return {s, std::max(e, s)};
}

SliceWindow slice_window(int64_t s, int64_t e, int64_t step, int64_t dim) {
  if (s < 0) s += dim;
  if (e < 0) e += dim;
  SliceWindow w;
  if (step > 0) {
    s = std::clamp(s, int64_t{0}, dim);
    e = std::clamp(e, int64_t{0}, dim);
    w.len = e > s ? (e - s - 1) / step + 1 : 0;  // no overflow for huge steps
  } else {
    s = std::clamp(s, int64_t{0}, dim - 1);
    e = std::clamp(e, int64_t{-1}, dim - 1);
    w.len = s > e ? (step == std::numeric_limits<int64_t>::min() ? 1 : (s - e - 1) / (-step) + 1) : 0;
  }
  w.start = s;
  return w;
}

std::vector<int64_t> transpose_perm(const ir::Node& n, bool has_perm, const std::vector<int64_t>& perm_attr, size_t r) {
  std::vector<int64_t> perm = perm_attr;
  if (!has_perm)
    for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
  std::vector<bool> seen(r, false);
  bool ok = perm.size() == r;
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(r) : perm[i];
    ok = p >= 0 && p < static_cast<int64_t>(r) && !seen[static_cast<size_t>(p)];
    if (ok) {
      seen[static_cast<size_t>(p)] = true;
      perm[i] = p;
    }
  }
  if (!ok)
    throw ModelError(n.describe() + ": Transpose perm " + dims_text(perm_attr) + " is not a permutation of rank " +
                     std::to_string(r));
  return perm;
}

}  // namespace mcc::backends
