// Softmax, LogSoftmax, Hardmax.
//   opsets 1-12: the input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] (axis default 1)
//                and the op runs over each row of that matrix;
//   opsets 13+:  the op runs along the single axis `axis` (default -1).
// Numerically stable: the row maximum is subtracted before exp. Hardmax puts 1 at the first
// maximum of each row.
// dtypes: f32, f64, f16, bf16 (Hardmax: every numeric dtype). Computation in f32 (f64 for f64
// inputs) with Eigen's vectorised exp (SIMD width chosen by the compiler flags); row sums are
// Eigen's fixed-order pairwise sums in the compute type, so results do not depend on the thread
// count. Softmax probabilities below the smallest normal value are flushed to 0. Contiguous f32/f64 rows (the reduced axis is the last one) are computed in place in the
// output without a gather. Parallelised over rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/reduce_util.h"

namespace mcc::backends::cpu {
namespace {

enum class Kind { Softmax, LogSoftmax, Hardmax };

struct RowLayout { int64_t outer = 1, d = 1, inner = 1; };

RowLayout row_layout(const ir::Node& n, const std::vector<int64_t>& dims, int64_t axis, bool legacy) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  RowLayout l;
  if (rank == 0) return l;  // a scalar is a single row of one element
  if (legacy) {
    // Opsets < 13 allow axis == rank (a [N, 1] matrix).
    if (axis < -rank || axis > rank)
      throw ModelError(n.describe() + ": axis " + std::to_string(axis) + " is out of range for rank " +
                       std::to_string(rank));
    if (axis < 0) axis += rank;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? l.outer : l.d) *= dims[i];
    return l;
  }
  axis = normalize_axis(n, axis, rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (i < axis) l.outer *= dims[i];
    else if (i == axis) l.d = dims[i];
    else l.inner *= dims[i];
  }
  return l;
}

// Softmax / LogSoftmax of one contiguous row `v` (length d) in place.
template <Kind K, class C>
void softmax_row(C* v, int64_t d) {
  Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>> row(v, d);
  const C mx = row.maxCoeff();
  if constexpr (K == Kind::Softmax) {
    row = (row - mx).exp();
    row *= C(1) / row.sum();
    // Probabilities below the smallest normal value become 0 (ONNX Runtime's are 0 there too):
    // Eigen's exp clamps its argument, so a masked -1e9 logit came out as 3e-39, and subnormal
    // operands slow the next product (attention probabilities x V) ~100x on CPUs without AVX-512.
    row = (row < std::numeric_limits<C>::min()).select(C(0), row);
  } else {
    const C lse = mx + std::log((row - mx).exp().sum());
    row -= lse;
  }
}

template <Kind K, class T>
void softmax_typed(KernelContext& ctx, const ir::Tensor& x, ir::Tensor& y, const RowLayout& l) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* src = x.data<T>().data();
  T* dst = y.mutable_data<T>().data();
  const int64_t d = l.d, inner = l.inner;
  if constexpr (K != Kind::Hardmax && std::is_same_v<T, C>) {
    if (inner == 1) {
      parallel_for_work(ctx, l.outer, d * 8, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          std::copy(src + r * d, src + (r + 1) * d, dst + r * d);
          softmax_row<K>(dst + r * d, d);
        }
      });
      return;
    }
  }
  ctx.parallel_for(l.outer * inner, d * 8, [&](int64_t b, int64_t e) {
    std::vector<C> row(static_cast<size_t>(d));
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = (r / inner) * d * inner + r % inner;
      for (int64_t j = 0; j < d; ++j) row[j] = static_cast<C>(load_value(src[base + j * inner]));
      if constexpr (K == Kind::Hardmax) {
        int64_t best = 0;
        for (int64_t j = 1; j < d; ++j)
          if (row[j] > row[best]) best = j;
        for (int64_t j = 0; j < d; ++j) dst[base + j * inner] = store_value<T>(j == best ? C(1) : C(0));
      } else {
        softmax_row<K>(row.data(), d);
        for (int64_t j = 0; j < d; ++j) dst[base + j * inner] = store_value<T>(row[j]);
      }
    }
  });
}

KernelFactory softmax_factory(Kind kind) {
  return [kind](const ir::Node& n) -> Kernel {
    const bool legacy = n.since_version < 13;
    const int64_t axis = n.attr_int("axis", legacy ? 1 : -1);
    return [kind, legacy, axis](KernelContext& ctx) {
      const ir::Node& node = ctx.node();
      const ir::Tensor& x = ctx.in(0);
      const RowLayout l = row_layout(node, x.dims(), axis, legacy);
      ir::Tensor& y = ctx.alloc_output_overwritten(0, x.dtype(), x.dims());
      if (x.numel() == 0) return;
      const std::string what = node.describe() + ": " + node.op_type;
      if (kind == Kind::Hardmax) {
        ir::dispatch<MCC_NUMERIC_DTYPES>(x.dtype(), what, [&](auto tag) {
          softmax_typed<Kind::Hardmax, typename decltype(tag)::type>(ctx, x, y, l);
        });
      } else if (kind == Kind::Softmax) {
        ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), what, [&](auto tag) {
          softmax_typed<Kind::Softmax, typename decltype(tag)::type>(ctx, x, y, l);
        });
      } else {
        ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), what, [&](auto tag) {
          softmax_typed<Kind::LogSoftmax, typename decltype(tag)::type>(ctx, x, y, l);
        });
      }
    };
  };
}

}  // namespace

void register_softmax(KernelRegistry& r) {
  r.add("Softmax", 1, 0, softmax_factory(Kind::Softmax));
  r.add("LogSoftmax", 1, 0, softmax_factory(Kind::LogSoftmax));
  r.add("Hardmax", 1, 0, softmax_factory(Kind::Hardmax));
}

}  // namespace mcc::backends::cpu
