// Reductions: ReduceSum (opsets 1-12 axes attribute, 13+ axes input), ReduceMean, ReduceMax,
// ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare
// (opsets 1-17 axes attribute, 18+ axes input). keepdims and noop_with_empty_axes as specified;
// an empty axes list reduces every axis unless noop_with_empty_axes=1 (then Y = X).
// Reductions over an empty set give the identity of the operation: 0 for Sum/L1/L2/SumSquare,
// 1 for Prod, -inf (lowest) for Max, +inf (highest) for Min, -inf for LogSum/LogSumExp, NaN for Mean.
// dtypes: f32, f64, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64 (bool too for Max/Min).
// Accumulation: f64 for float inputs (f16/bf16 load through f32); i64/u64 for integers (Mean
// divides in integer arithmetic; L2/LogSum/LogSumExp compute in f64 and cast back).
// Parallelised over output elements.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/reduce_util.h"

namespace mcc::backends::cpu {
namespace {

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

struct ReduceAttrs {
  Kind kind;
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  bool axes_from_input = false;
  std::vector<int64_t> axes;  // from the attribute (older opsets)
  std::string what;           // "<node>: <op>", the context of dtype errors (built once)
};

// Input dims split into the kept and reduced dims (coalesced, size-1 dims dropped).
struct ReduceLayout {
  std::vector<int64_t> kept_sizes, kept_strides;  // output order
  std::vector<int64_t> red_sizes, red_strides;
  int64_t num_out = 1, num_red = 1;
};

ReduceLayout make_layout(const std::vector<int64_t>& dims, const std::vector<bool>& reduced) {
  ReduceLayout l;
  const auto strides = contiguous_strides(dims);
  int last = -1;  // kind of the last pushed dim: 0 kept, 1 reduced
  for (size_t i = 0; i < dims.size(); ++i) {
    if (reduced[i]) l.num_red *= dims[i]; else l.num_out *= dims[i];
    if (dims[i] == 1) continue;
    auto& sz = reduced[i] ? l.red_sizes : l.kept_sizes;
    auto& st = reduced[i] ? l.red_strides : l.kept_strides;
    // Adjacent dims of the same kind (only size-1 dims between) are contiguous: merge them.
    if (last == static_cast<int>(reduced[i])) { sz.back() *= dims[i]; st.back() = strides[i]; }
    else { sz.push_back(dims[i]); st.push_back(strides[i]); }
    last = static_cast<int>(reduced[i]);
  }
  return l;
}

template <class T> using AccOf =
    std::conditional_t<is_float_storage<T>, double,
                       std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <Kind K, class T>
void reduce_typed(KernelContext& ctx, const ir::Tensor& x, ir::Tensor& y, const ReduceLayout& l) {
  using Acc = AccOf<T>;
  constexpr bool kFloat = is_float_storage<T>;
  const T* src = x.data<T>().data();
  T* dst = y.mutable_data<T>().data();
  const int64_t nred = l.num_red;
  const size_t rk = l.red_sizes.size();

  // Calls f(offset) for every reduced element below `base` (odometer over the reduced dims,
  // innermost dim as a tight loop).
  auto for_reduced = [&](int64_t base, auto&& f) {
    if (nred == 0) return;
    if (rk == 0) { f(base); return; }
    const int64_t inner = l.red_sizes[rk - 1], inner_stride = l.red_strides[rk - 1];
    int64_t idx[16] = {0};
    int64_t off = base;
    while (true) {
      for (int64_t j = 0; j < inner; ++j) f(off + j * inner_stride);
      size_t d = rk - 1;
      while (d-- > 0) {
        ++idx[d];
        off += l.red_strides[d];
        if (idx[d] < l.red_sizes[d]) break;
        off -= l.red_strides[d] * idx[d];
        idx[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) return;
    }
  };

  auto one = [&](int64_t o) {
    int64_t base = 0, rem = o;
    for (size_t d = l.kept_sizes.size(); d-- > 0;) {
      base += (rem % l.kept_sizes[d]) * l.kept_strides[d];
      rem /= l.kept_sizes[d];
    }
    if constexpr (K == Kind::Max || K == Kind::Min) {
      Acc acc;
      if constexpr (kFloat) acc = K == Kind::Max ? -std::numeric_limits<double>::infinity()
                                                 : std::numeric_limits<double>::infinity();
      else acc = K == Kind::Max ? static_cast<Acc>(std::numeric_limits<T>::lowest())
                                : static_cast<Acc>(std::numeric_limits<T>::max());
      bool nan = false;
      for_reduced(base, [&](int64_t off) {
        const Acc v = static_cast<Acc>(load_value(src[off]));
        if constexpr (kFloat) if (std::isnan(v)) nan = true;
        if (K == Kind::Max ? v > acc : v < acc) acc = v;
      });
      if constexpr (kFloat) if (nan) acc = std::numeric_limits<double>::quiet_NaN();
      dst[o] = store_value<T>(acc);
    } else if constexpr (K == Kind::LogSumExp) {
      double mx = -std::numeric_limits<double>::infinity();
      for_reduced(base, [&](int64_t off) { mx = std::max(mx, static_cast<double>(load_value(src[off]))); });
      // All -inf or an empty set: log(0) = -inf; any +inf: +inf.
      if (std::isinf(mx)) { dst[o] = store_value<T>(mx); return; }
      double s = 0;
      for_reduced(base, [&](int64_t off) { s += std::exp(static_cast<double>(load_value(src[off])) - mx); });
      dst[o] = store_value<T>(mx + std::log(s));
    } else if constexpr (K == Kind::L2 || K == Kind::LogSum) {
      double s = 0;
      for_reduced(base, [&](int64_t off) {
        const double v = static_cast<double>(load_value(src[off]));
        s += K == Kind::L2 ? v * v : v;
      });
      dst[o] = store_value<T>(K == Kind::L2 ? std::sqrt(s) : std::log(s));
    } else {
      Acc acc = K == Kind::Prod ? Acc(1) : Acc(0);
      for_reduced(base, [&](int64_t off) {
        const Acc v = static_cast<Acc>(load_value(src[off]));
        if constexpr (K == Kind::Prod) acc *= v;
        else if constexpr (K == Kind::SumSquare) acc += v * v;
        else if constexpr (K == Kind::L1) {
          if constexpr (std::is_unsigned_v<Acc>) acc += v; else acc += v < 0 ? -v : v;
        } else acc += v;
      });
      if constexpr (K == Kind::Mean) {
        if constexpr (kFloat) acc = acc / static_cast<double>(nred);
        else acc = nred == 0 ? Acc(0) : static_cast<Acc>(acc / static_cast<Acc>(nred));
      }
      dst[o] = store_value<T>(acc);
    }
  };
  ctx.parallel_for(l.num_out, std::max<int64_t>(nred, 1) * 4, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) one(o);
  });
}

template <Kind K>
void reduce_dispatch(KernelContext& ctx, const ir::Tensor& x, ir::Tensor& y, const ReduceLayout& l,
                     const std::string& what) {
  auto body = [&](auto tag) { reduce_typed<K, typename decltype(tag)::type>(ctx, x, y, l); };
  if constexpr (K == Kind::Max || K == Kind::Min)
    ir::dispatch<MCC_NUMERIC_DTYPES, ir::DType::Bool>(x.dtype(), what, body);
  else
    ir::dispatch<MCC_NUMERIC_DTYPES>(x.dtype(), what, body);
}

void run_reduce(KernelContext& ctx, const ReduceAttrs& a) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> axes = a.axes;
  if (a.axes_from_input && ctx.has_input(1)) axes = read_int_tensor(n, ctx.in(1), "axes");
  if (axes.empty() && a.noop_with_empty_axes) {
    ctx.set_output(0, x);
    return;
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t ax : axes) {
    if (ax < -rank || ax >= rank)
      throw ModelError(n.describe() + ": axis " + std::to_string(ax) + " is out of range for rank " +
                       std::to_string(rank));
    reduced[ax < 0 ? ax + rank : ax] = true;
  }
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i]) out_dims.push_back(x.dims()[i]);
    else if (a.keepdims) out_dims.push_back(1);
  }
  ir::Tensor& y = ctx.alloc_output(0, x.dtype(), out_dims);
  const ReduceLayout l = make_layout(x.dims(), reduced);
  if (l.red_sizes.size() > 15)
    throw UnsupportedError(n.describe() + ": more than 15 non-adjacent reduced dims");
  if (l.num_out == 0) return;
  const std::string& what = a.what;
  switch (a.kind) {
    case Kind::Sum: reduce_dispatch<Kind::Sum>(ctx, x, y, l, what); break;
    case Kind::Mean: reduce_dispatch<Kind::Mean>(ctx, x, y, l, what); break;
    case Kind::Max: reduce_dispatch<Kind::Max>(ctx, x, y, l, what); break;
    case Kind::Min: reduce_dispatch<Kind::Min>(ctx, x, y, l, what); break;
    case Kind::Prod: reduce_dispatch<Kind::Prod>(ctx, x, y, l, what); break;
    case Kind::L1: reduce_dispatch<Kind::L1>(ctx, x, y, l, what); break;
    case Kind::L2: reduce_dispatch<Kind::L2>(ctx, x, y, l, what); break;
    case Kind::LogSum: reduce_dispatch<Kind::LogSum>(ctx, x, y, l, what); break;
    case Kind::LogSumExp: reduce_dispatch<Kind::LogSumExp>(ctx, x, y, l, what); break;
    case Kind::SumSquare: reduce_dispatch<Kind::SumSquare>(ctx, x, y, l, what); break;
  }
}

KernelFactory reduce_factory(Kind kind, bool axes_from_input) {
  return [kind, axes_from_input](const ir::Node& n) -> Kernel {
    ReduceAttrs a;
    a.kind = kind;
    a.keepdims = n.attr_int("keepdims", 1) != 0;
    a.noop_with_empty_axes = n.attr_int("noop_with_empty_axes", 0) != 0;
    a.axes_from_input = axes_from_input;
    a.what = n.describe() + ": " + n.op_type;
    if (!axes_from_input) a.axes = n.attr_ints("axes");
    else if (n.has_attr("axes"))
      throw ModelError(n.describe() + ": axes is an input from this opset on, not an attribute");
    return [a](KernelContext& ctx) { run_reduce(ctx, a); };
  };
}

}  // namespace

void register_reductions(KernelRegistry& r) {
  r.add("ReduceSum", 1, 12, reduce_factory(Kind::Sum, false));
  r.add("ReduceSum", 13, 0, reduce_factory(Kind::Sum, true));
  const std::pair<const char*, Kind> later[] = {
      {"ReduceMean", Kind::Mean}, {"ReduceMax", Kind::Max}, {"ReduceMin", Kind::Min},
      {"ReduceProd", Kind::Prod}, {"ReduceL1", Kind::L1}, {"ReduceL2", Kind::L2},
      {"ReduceLogSum", Kind::LogSum}, {"ReduceLogSumExp", Kind::LogSumExp},
      {"ReduceSumSquare", Kind::SumSquare}};
  for (const auto& [op, kind] : later) {
    r.add(op, 1, 17, reduce_factory(kind, false));
    r.add(op, 18, 0, reduce_factory(kind, true));
  }
}

}  // namespace mcc::backends::cpu
