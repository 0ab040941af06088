// ArgMax, ArgMin (opsets 1-10, 11 negative axes, 12+ select_last_index; keepdims) and TopK
// (opset 1: k attribute; 10: K input; 11+: largest, sorted, negative axis).
// Ties: ArgMax/ArgMin return the first (or with select_last_index the last) extreme index;
// TopK orders equal values by ascending index, as the spec requires. NaN compares above every
// number (so it is the largest). TopK with sorted=0 still returns sorted results (allowed).
// dtypes: f32, f64, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64; indices are int64.
// Comparison in the element type (f16/bf16 through f32). Parallelised over rows.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/reduce_util.h"

namespace mcc::backends::cpu {
namespace {

struct AxisLayout { int64_t outer = 1, d = 1, inner = 1; };

AxisLayout axis_layout(const std::vector<int64_t>& dims, int64_t axis) {
  AxisLayout l;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) {
    if (i < axis) l.outer *= dims[i];
    else if (i == axis) l.d = dims[i];
    else l.inner *= dims[i];
  }
  return l;
}

// a > b with NaN above every number (a strict weak order even with NaNs).
template <class V>
bool greater(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

// ---------------------------------------------------------------- ArgMax / ArgMin

struct ArgAttrs { bool is_max; int64_t axis; bool keepdims, last; };

void run_arg(KernelContext& ctx, const ArgAttrs& a) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(n, a.axis, rank);
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) out_dims.push_back(x.dims()[i]);
    else if (a.keepdims) out_dims.push_back(1);
  }
  const AxisLayout l = axis_layout(x.dims(), axis);
  if (l.d == 0 && l.outer * l.inner > 0)
    throw ModelError(n.describe() + ": " + n.op_type + " over an empty axis");
  int64_t* dst = ctx.alloc_output(0, ir::DType::I64, out_dims).mutable_data<int64_t>().data();
  ir::dispatch<MCC_NUMERIC_DTYPES>(x.dtype(), n.describe() + ": " + n.op_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>().data();
    ctx.parallel_for(l.outer * l.inner, l.d * 2, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t base = (r / l.inner) * l.d * l.inner + r % l.inner;
        auto best = load_value(src[base]);
        int64_t bi = 0;
        for (int64_t j = 1; j < l.d; ++j) {
          const auto v = load_value(src[base + j * l.inner]);
          const bool better = a.is_max ? greater(v, best) : greater(best, v);
          const bool equal = !greater(v, best) && !greater(best, v);
          if (better || (a.last && equal)) { best = v; bi = j; }
        }
        dst[r] = bi;
      }
    });
  });
}

KernelFactory arg_factory(bool is_max) {
  return [is_max](const ir::Node& n) -> Kernel {
    ArgAttrs a{is_max, n.attr_int("axis", 0), n.attr_int("keepdims", 1) != 0,
               n.attr_int("select_last_index", 0) != 0};
    return [a](KernelContext& ctx) { run_arg(ctx, a); };
  };
}

// ---------------------------------------------------------------- TopK

struct TopKAttrs { int64_t axis, k_attr; bool k_from_input, largest, sorted; };

void run_topk(KernelContext& ctx, const TopKAttrs& a) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(n, a.axis, rank);
  int64_t k = a.k_attr;
  if (a.k_from_input) {
    const auto kv = read_int_tensor(n, ctx.in(1), "K");
    if (kv.size() != 1) throw ModelError(n.describe() + ": K must hold exactly one value");
    k = kv[0];
  }
  const AxisLayout l = axis_layout(x.dims(), axis);
  if (k < 0 || k > l.d)
    throw ModelError(n.describe() + ": k=" + std::to_string(k) + " is out of range for an axis of size " +
                     std::to_string(l.d));
  std::vector<int64_t> out_dims = x.dims();
  out_dims[axis] = k;
  ir::Tensor& vals = ctx.alloc_output(0, x.dtype(), out_dims);
  int64_t* idx_out = ctx.alloc_output(1, ir::DType::I64, out_dims).mutable_data<int64_t>().data();
  if (k == 0) return;
  ir::dispatch<MCC_NUMERIC_DTYPES>(x.dtype(), n.describe() + ": TopK", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>().data();
    T* vdst = vals.mutable_data<T>().data();
    ctx.parallel_for(l.outer * l.inner, l.d * 8, [&](int64_t b, int64_t e) {
      using V = decltype(load_value(src[0]));
      std::vector<V> row(static_cast<size_t>(l.d));
      std::vector<int64_t> order(static_cast<size_t>(l.d));
      for (int64_t r = b; r < e; ++r) {
        const int64_t o = r / l.inner, i = r % l.inner;
        const int64_t base = o * l.d * l.inner + i;
        for (int64_t j = 0; j < l.d; ++j) row[j] = load_value(src[base + j * l.inner]);
        std::iota(order.begin(), order.end(), int64_t{0});
        auto cmp = [&](int64_t p, int64_t q) {
          if (a.largest) { if (greater(row[p], row[q])) return true; if (greater(row[q], row[p])) return false; }
          else { if (greater(row[q], row[p])) return true; if (greater(row[p], row[q])) return false; }
          return p < q;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp);
        const int64_t obase = o * k * l.inner + i;
        for (int64_t j = 0; j < k; ++j) {
          vdst[obase + j * l.inner] = src[base + order[j] * l.inner];
          idx_out[obase + j * l.inner] = order[j];
        }
      }
    });
  });
}

KernelFactory topk_factory(int since) {
  return [since](const ir::Node& n) -> Kernel {
    TopKAttrs a{n.attr_int("axis", -1), 0, since >= 10, true, true};
    if (since < 10) {
      if (!n.has_attr("k")) throw ModelError(n.describe() + ": TopK-1 requires the attribute k");
      a.k_attr = n.attr_int("k", 0);
    }
    if (since >= 11) {
      a.largest = n.attr_int("largest", 1) != 0;
      a.sorted = n.attr_int("sorted", 1) != 0;
    }
    return [a](KernelContext& ctx) { run_topk(ctx, a); };
  };
}

}  // namespace

void register_arg_topk(KernelRegistry& r) {
  r.add("ArgMax", 1, 0, arg_factory(true));
  r.add("ArgMin", 1, 0, arg_factory(false));
  r.add("TopK", 1, 9, topk_factory(1));
  r.add("TopK", 10, 10, topk_factory(10));
  r.add("TopK", 11, 0, topk_factory(11));
}

}  // namespace mcc::backends::cpu
