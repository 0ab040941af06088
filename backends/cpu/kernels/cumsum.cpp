// CumSum (opsets 11, 14+) and CumProd (opset 26+): cumulative sum / product along the axis given
// by the second input (a scalar or one-element i32/i64 tensor), with the exclusive and reverse
// attributes (an exclusive scan starts from 0 for CumSum, 1 for CumProd).
// dtypes: f32, f64, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64.
// Accumulation: f64 for float inputs; CumSum i64/u64 for integers, CumProd u64 (two's complement
// products, so signed overflow wraps like the sum instead of being undefined), both wrapping to the
// element type. Parallelised over the lines along the axis.
#include <type_traits>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/reduce_util.h"

namespace mcc::backends::cpu {
namespace {

struct CumSumAttrs { bool exclusive, reverse, product; };

/// One scan per line along the axis; Acc is the accumulation type.
template <class T, class Acc>
void scan(KernelContext& ctx, const ir::Tensor& x, ir::Tensor& y, int64_t outer, int64_t d, int64_t inner,
          const CumSumAttrs& a) {
  const T* src = x.data<T>().data();
  T* dst = y.mutable_data<T>().data();
  ctx.parallel_for(outer * inner, d * 2, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = (r / inner) * d * inner + r % inner;
      Acc acc = a.product ? Acc(1) : Acc(0);
      for (int64_t s = 0; s < d; ++s) {
        const int64_t j = a.reverse ? d - 1 - s : s;
        const int64_t off = base + j * inner;
        const Acc v = static_cast<Acc>(load_value(src[off]));
        if (a.exclusive) dst[off] = store_value<T>(acc);
        if (a.product) acc *= v;
        else acc += v;
        if (!a.exclusive) dst[off] = store_value<T>(acc);
      }
    }
  });
}

void run_cumsum(KernelContext& ctx, const CumSumAttrs& a) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  const auto axv = read_int_tensor(n, ctx.in(1), "axis");
  if (axv.size() != 1) throw ModelError(n.describe() + ": axis must be a scalar");
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank == 0) throw ModelError(n.describe() + ": " + n.op_type + " input must have rank >= 1");
  const int64_t axis = normalize_axis(n, axv[0], rank);
  int64_t outer = 1, d = x.dims()[axis], inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims()[i];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dims()[i];
  ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
  if (x.numel() == 0) return;
  ir::dispatch<MCC_NUMERIC_DTYPES>(x.dtype(), n.describe() + ": " + n.op_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_float_storage<T>) {
      scan<T, double>(ctx, x, y, outer, d, inner, a);
    } else if (a.product || !std::is_signed_v<T>) {
      scan<T, uint64_t>(ctx, x, y, outer, d, inner, a);
    } else {
      scan<T, int64_t>(ctx, x, y, outer, d, inner, a);
    }
  });
}

}  // namespace

void register_cumsum(KernelRegistry& r) {
  r.add("CumSum", 11, 0, [](const ir::Node& n) -> Kernel {
    CumSumAttrs a{n.attr_int("exclusive", 0) != 0, n.attr_int("reverse", 0) != 0, false};
    return [a](KernelContext& ctx) { run_cumsum(ctx, a); };
  });
  r.add("CumProd", 26, 0, [](const ir::Node& n) -> Kernel {
    CumSumAttrs a{n.attr_int("exclusive", 0) != 0, n.attr_int("reverse", 0) != 0, true};
    return [a](KernelContext& ctx) { run_cumsum(ctx, a); };
  });
}

}  // namespace mcc::backends::cpu
