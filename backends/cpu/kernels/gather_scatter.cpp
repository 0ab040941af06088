// Indexing ops: Gather 1-13+, GatherElements 11-13+, GatherND 11-13+ (batch_dims from 12),
// Scatter 9-10 (deprecated, = ScatterElements without reduction), ScatterElements 11-18+ and
// ScatterND 11-18+ (reduction none/add/mul from 16, max/min from 18), TensorScatter 24+ (linear
// and circular), OneHot 9-11+, Compress 9-11+,
// NonZero 9-13+, Unique 11+ (sorted/unsorted, with or without axis, all four outputs).
// dtypes: data of every fixed-size dtype and string for the gathers, scatters without reduction,
// Compress and OneHot values (byte-generic movement); scatter reductions, NonZero and Unique
// dispatch over all numeric dtypes + bool (Unique also strings). Indices are int32 or int64
// (OneHot: any numeric, truncated toward zero); negative indices count from the end.
// Accumulation: scatter reductions compute in the data dtype (f16/bf16 through f32), in index
// order. Not supported: packed sub-byte dtypes.
#include <algorithm>
#include <numeric>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/tensor_ops_util.h"

namespace mcc::backends::cpu {
namespace {
using namespace tensor_ops;
using ir::DType;
using ir::Tensor;

/// Reads index tensor `t` and maps negatives into [0, bound); out-of-range values are a ModelError.
std::vector<int64_t> read_indices(const ir::Node& n, const Tensor& t, int64_t bound,
                                  const char* what) {
  auto v = read_int_tensor(n, t, what);
  for (auto& i : v) {
    const int64_t orig = i;
    if (i < 0) i += bound;
    if (i < 0 || i >= bound)
      throw ModelError(n.describe() + ": " + what + " value " + std::to_string(orig) +
                       " is outside [-" + std::to_string(bound) + ", " + std::to_string(bound) +
                       ")");
  }
  return v;
}

int64_t prod(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e && i < d.size(); ++i) p *= d[i];
  return p;
}

// ---------------------------------------------------------------- gathers

Kernel make_gather(const ir::Node& n) {
  const int64_t axis_attr = n.attr_int("axis", 0);
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype(), "data");
    const auto r = static_cast<int64_t>(x.rank());
    if (r == 0) throw ModelError(ctx.node().describe() + ": Gather data must have rank >= 1");
    const auto axis = static_cast<size_t>(normalize_axis(ctx.node(), axis_attr, r));
    const int64_t N = x.dims()[axis];
    const Tensor& it = ctx.in(1);
    const auto idx = read_indices(ctx.node(), it, N, "Gather indices");
    std::vector<int64_t> out(x.dims().begin(),
                             x.dims().begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), it.dims().begin(), it.dims().end());
    out.insert(out.end(), x.dims().begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.dims().end());
    const int64_t outer = prod(x.dims(), 0, axis), inner = prod(x.dims(), axis + 1, x.rank());
    const auto Q = static_cast<int64_t>(idx.size());
    Tensor& y = ctx.alloc_output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    with_elem_copy(x, y, [&](auto copy) {
      ctx.parallel_for(outer * Q, inner, [&](int64_t b, int64_t e) {
        for (int64_t oq = b; oq < e; ++oq) {
          const int64_t o = oq / Q, q = oq % Q;
          const int64_t src = (o * N + idx[static_cast<size_t>(q)]) * inner;
          if (inner == 1)
            copy(oq, src);
          else
            copy_elems(x, src, y, oq * inner, inner);
        }
      });
    });
  };
}

/// Visits every multi-index of `dims`, calling f(flat, offset) where offset = sum idx[d]*strides[d]
/// over all d except `skip`, and the current idx vector.
template <class F>
void for_each_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                    size_t skip, F&& f) {
  const int64_t total = ir::checked_numel(dims);
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(i, off, idx);
    for (size_t d = dims.size(); d-- > 0;) {
      if (d != skip) off += strides[d];
      if (++idx[d] < dims[d]) break;
      if (d != skip) off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

/// Shared checks of GatherElements/ScatterElements: same rank, index dims within data dims.
void check_elements_shapes(const ir::Node& n, const Tensor& data, const Tensor& ind, size_t axis) {
  bool ok = ind.rank() == data.rank();
  for (size_t d = 0; ok && d < data.rank(); ++d) ok = d == axis || ind.dims()[d] <= data.dims()[d];
  if (!ok)
    throw ModelError(n.describe() + ": " + n.op_type + " indices " + dims_str(ind.dims()) +
                     " do not fit data " + dims_str(data.dims()));
}

Kernel make_gather_elements(const ir::Node& n) {
  const int64_t axis_attr = n.attr_int("axis", 0);
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype(), "data");
    const Tensor& it = ctx.in(1);
    const auto axis =
        static_cast<size_t>(normalize_axis(ctx.node(), axis_attr, static_cast<int64_t>(x.rank())));
    check_elements_shapes(ctx.node(), x, it, axis);
    const auto idx = read_indices(ctx.node(), it, x.dims()[axis], "GatherElements indices");
    const auto strides = contiguous_strides(x.dims());
    Tensor& y = ctx.alloc_output(0, x.dtype(), it.dims());
    with_elem_copy(x, y, [&](auto copy) {
      for_each_index(it.dims(), strides, axis,
                     [&](int64_t i, int64_t off, const std::vector<int64_t>&) {
                       copy(i, off + idx[static_cast<size_t>(i)] * strides[axis]);
                     });
    });
  };
}

Kernel make_gather_nd(const ir::Node& n) {
  const int64_t batch_dims = n.attr_int("batch_dims", 0);
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype(), "data");
    const Tensor& it = ctx.in(1);
    const auto b = static_cast<size_t>(batch_dims);
    const size_t r = x.rank(), q = it.rank();
    if (batch_dims < 0 || q < 1 || b >= q || b >= r)
      throw ModelError(ctx.node().describe() + ": GatherND batch_dims " +
                       std::to_string(batch_dims) + " invalid for data " + dims_str(x.dims()) +
                       " and indices " + dims_str(it.dims()));
    const auto k = static_cast<size_t>(it.dims().back());
    if (k < 1 || b + k > r)
      throw ModelError(ctx.node().describe() + ": GatherND index length " + std::to_string(k) +
                       " too long for data " + dims_str(x.dims()));
    for (size_t d = 0; d < b; ++d)
      if (x.dims()[d] != it.dims()[d])
        throw ModelError(ctx.node().describe() + ": GatherND batch dims of data " +
                         dims_str(x.dims()) + " and indices " + dims_str(it.dims()) + " differ");
    const auto raw = read_int_tensor(ctx.node(), it, "GatherND indices");
    std::vector<int64_t> out(it.dims().begin(), it.dims().end() - 1);
    out.insert(out.end(), x.dims().begin() + static_cast<std::ptrdiff_t>(b + k), x.dims().end());
    const int64_t batches = prod(x.dims(), 0, b), per_batch = prod(it.dims(), b, q - 1);
    const int64_t slab = prod(x.dims(), b, r), block = prod(x.dims(), b + k, r);
    const auto strides = contiguous_strides(
        std::vector<int64_t>(x.dims().begin() + static_cast<std::ptrdiff_t>(b), x.dims().end()));
    // Resolve every index tuple to a source offset first (errors before any copy).
    std::vector<int64_t> src(static_cast<size_t>(batches * per_batch));
    for (int64_t t = 0; t < batches * per_batch; ++t) {
      int64_t off = (t / std::max<int64_t>(per_batch, 1)) * slab;
      for (size_t j = 0; j < k; ++j) {
        int64_t v = raw[static_cast<size_t>(t) * k + j];
        const int64_t dim = x.dims()[b + j];
        if (v < 0) v += dim;
        if (v < 0 || v >= dim)
          throw ModelError(ctx.node().describe() + ": GatherND index " +
                           std::to_string(raw[static_cast<size_t>(t) * k + j]) +
                           " is outside an axis of size " + std::to_string(dim));
        off += v * strides[j];
      }
      src[static_cast<size_t>(t)] = off;
    }
    Tensor& y = ctx.alloc_output(0, x.dtype(), out);
    for (size_t t = 0; t < src.size(); ++t)
      copy_elems(x, src[t], y, static_cast<int64_t>(t) * block, block);
  };
}

// ---------------------------------------------------------------- scatters

enum class Reduction { None, Add, Mul, Max, Min };

Reduction parse_reduction(const ir::Node& n) {
  const std::string s = n.attr_string("reduction", "none");
  if (s == "none") return Reduction::None;
  if (s == "add") return Reduction::Add;
  if (s == "mul") return Reduction::Mul;
  if (s == "max") return Reduction::Max;
  if (s == "min") return Reduction::Min;
  throw ModelError(n.describe() + ": " + n.op_type + " reduction '" + s +
                   "' is not none, add, mul, max or min");
}

/// Calls f(apply) where apply(d, s) combines updates[s] into out[d] with the reduction.
template <class F>
void with_reducer(const ir::Node& n, Reduction red, const Tensor& upd, Tensor& out, F&& f) {
  if (red == Reduction::None) {
    with_elem_copy(upd, out, f);
    return;
  }
  ir::dispatch<MCC_NUMERIC_DTYPES>(out.dtype(), n.describe() + ": " + n.op_type + " reduction",
                                   [&](auto tag) {
                                     using T = typename decltype(tag)::type;
                                     auto u = upd.data<T>();
                                     auto o = out.mutable_data<T>();
                                     f([&](int64_t d, int64_t s) {
                                       T& a = o[static_cast<size_t>(d)];
                                       const T b = u[static_cast<size_t>(s)];
                                       switch (red) {
                                         case Reduction::Add:
                                           a = static_cast<T>(a + b);
                                           break;
                                         case Reduction::Mul:
                                           a = static_cast<T>(a * b);
                                           break;
                                         case Reduction::Max:
                                           a = b > a ? b : a;
                                           break;
                                         case Reduction::Min:
                                           a = b < a ? b : a;
                                           break;
                                         case Reduction::None:
                                           a = b;
                                           break;
                                       }
                                     });
                                   });
}

Kernel make_scatter_elements(const ir::Node& n) {
  const int64_t axis_attr = n.attr_int("axis", 0);
  const Reduction red = parse_reduction(n);
  return [=](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &it = ctx.in(1), &upd = ctx.in(2);
    check_movable(ctx.node(), x.dtype(), "data");
    const auto axis =
        static_cast<size_t>(normalize_axis(ctx.node(), axis_attr, static_cast<int64_t>(x.rank())));
    check_elements_shapes(ctx.node(), x, it, axis);
    if (upd.dims() != it.dims() || upd.dtype() != x.dtype())
      throw ModelError(ctx.node().describe() + ": " + ctx.node().op_type + " updates " +
                       dims_str(upd.dims()) + " must match indices " + dims_str(it.dims()) +
                       " and the data dtype");
    const auto idx = read_indices(ctx.node(), it, x.dims()[axis], "indices");
    const auto strides = contiguous_strides(x.dims());
    Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    copy_elems(x, 0, y, 0, x.numel());
    with_reducer(ctx.node(), red, upd, y, [&](auto apply) {
      for_each_index(it.dims(), strides, axis,
                     [&](int64_t i, int64_t off, const std::vector<int64_t>&) {
                       apply(off + idx[static_cast<size_t>(i)] * strides[axis], i);
                     });
    });
  };
}

Kernel make_scatter_nd(const ir::Node& n) {
  const Reduction red = parse_reduction(n);
  return [=](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &it = ctx.in(1), &upd = ctx.in(2);
    check_movable(ctx.node(), x.dtype(), "data");
    const size_t r = x.rank(), q = it.rank();
    if (q < 1) throw ModelError(ctx.node().describe() + ": ScatterND indices must have rank >= 1");
    const auto k = static_cast<size_t>(it.dims().back());
    if (k > r)
      throw ModelError(ctx.node().describe() + ": ScatterND index length " + std::to_string(k) +
                       " exceeds data rank");
    std::vector<int64_t> want(it.dims().begin(), it.dims().end() - 1);
    want.insert(want.end(), x.dims().begin() + static_cast<std::ptrdiff_t>(k), x.dims().end());
    if (upd.dims() != want || upd.dtype() != x.dtype())
      throw ModelError(ctx.node().describe() + ": ScatterND updates " + dims_str(upd.dims()) +
                       " must be " + dims_str(want) + " of the data dtype");
    const auto raw = read_int_tensor(ctx.node(), it, "ScatterND indices");
    const auto strides = contiguous_strides(x.dims());
    const int64_t block = prod(x.dims(), k, r), tuples = prod(it.dims(), 0, q - 1);
    std::vector<int64_t> dst(static_cast<size_t>(tuples));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (size_t j = 0; j < k; ++j) {
        int64_t v = raw[static_cast<size_t>(t) * k + j];
        if (v < 0) v += x.dims()[j];
        if (v < 0 || v >= x.dims()[j])
          throw ModelError(ctx.node().describe() + ": ScatterND index " +
                           std::to_string(raw[static_cast<size_t>(t) * k + j]) +
                           " is outside an axis of size " + std::to_string(x.dims()[j]));
        off += v * strides[j];
      }
      dst[static_cast<size_t>(t)] = off;
    }
    Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    copy_elems(x, 0, y, 0, x.numel());
    with_reducer(ctx.node(), red, upd, y, [&](auto apply) {
      for (int64_t t = 0; t < tuples; ++t)
        for (int64_t e = 0; e < block; ++e) apply(dst[static_cast<size_t>(t)] + e, t * block + e);
    });
  };
}

Kernel make_tensor_scatter(const ir::Node& n) {
  const int64_t axis_attr = n.attr_int("axis", -2);
  const std::string mode = n.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular")
    throw ModelError(n.describe() + ": TensorScatter mode '" + mode +
                     "' is not linear or circular");
  const bool circular = mode == "circular";
  return [=](KernelContext& ctx) {
    const Tensor &past = ctx.in(0), &upd = ctx.in(1);
    check_movable(ctx.node(), past.dtype(), "past_cache");
    const auto r = static_cast<int64_t>(past.rank());
    const auto axis = static_cast<size_t>(normalize_axis(ctx.node(), axis_attr, r));
    bool ok = axis >= 1 && upd.rank() == past.rank() && upd.dtype() == past.dtype();
    for (size_t d = 0; ok && d < past.rank(); ++d)
      ok = d == axis ? upd.dims()[d] <= past.dims()[d] : upd.dims()[d] == past.dims()[d];
    if (!ok)
      throw ModelError(ctx.node().describe() + ": TensorScatter update " + dims_str(upd.dims()) +
                       " does not fit cache " + dims_str(past.dims()) + " along axis " +
                       std::to_string(axis));
    const int64_t batch = past.dims()[0], max_len = past.dims()[axis], seq = upd.dims()[axis];
    std::vector<int64_t> w =
        ctx.has_input(2) ? read_int_tensor(ctx.node(), ctx.in(2), "TensorScatter write_indices")
                         : std::vector<int64_t>(static_cast<size_t>(batch), 0);
    if (static_cast<int64_t>(w.size()) != batch)
      throw ModelError(ctx.node().describe() +
                       ": TensorScatter write_indices needs one value per batch entry");
    for (int64_t v : w)
      if (v < 0 || (!circular && v + seq > max_len))
        throw ModelError(ctx.node().describe() + ": TensorScatter write index " +
                         std::to_string(v) + " with " + std::to_string(seq) +
                         " updates overruns the cache length " + std::to_string(max_len));
    const int64_t prefix = prod(past.dims(), 0, axis),
                  per_batch = prefix / std::max<int64_t>(batch, 1);
    const int64_t inner = prod(past.dims(), axis + 1, past.rank());
    Tensor& y = ctx.alloc_output(0, past.dtype(), past.dims());
    copy_elems(past, 0, y, 0, past.numel());
    for (int64_t p = 0; p < prefix; ++p) {
      const int64_t wi = w[static_cast<size_t>(p / std::max<int64_t>(per_batch, 1))];
      for (int64_t s = 0; s < seq; ++s) {
        int64_t c = wi + s;
        if (circular) c %= max_len;
        copy_elems(upd, (p * seq + s) * inner, y, (p * max_len + c) * inner, inner);
      }
    }
  };
}

// ---------------------------------------------------------------- OneHot, Compress, NonZero

/// Any numeric tensor read as int64 (floats truncated toward zero).
std::vector<int64_t> read_as_int64(const ir::Node& n, const Tensor& t, const char* what) {
  std::vector<int64_t> v;
  v.reserve(static_cast<size_t>(t.numel()));
  ir::dispatch<MCC_NUMERIC_DTYPES>(t.dtype(), n.describe() + ": " + what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T e : t.data<T>()) v.push_back(static_cast<int64_t>(static_cast<double>(e)));
  });
  return v;
}

Kernel make_one_hot(const ir::Node& n) {
  const int64_t axis_attr = n.attr_int("axis", -1);
  return [=](KernelContext& ctx) {
    const Tensor &it = ctx.in(0), &dt = ctx.in(1), &vals = ctx.in(2);
    check_movable(ctx.node(), vals.dtype(), "values");
    const auto depth_v = read_as_int64(ctx.node(), dt, "OneHot depth");
    if (depth_v.size() != 1 || depth_v[0] < 1)
      throw ModelError(ctx.node().describe() + ": OneHot depth must be one positive value");
    if (vals.numel() != 2)
      throw ModelError(ctx.node().describe() + ": OneHot values must hold [off, on]");
    const int64_t depth = depth_v[0];
    const auto r = static_cast<int64_t>(it.rank());
    const auto axis = static_cast<size_t>(normalize_axis(ctx.node(), axis_attr, r + 1));
    const auto idx = read_as_int64(ctx.node(), it, "OneHot indices");
    std::vector<int64_t> out = it.dims();
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), depth);
    const int64_t outer = prod(it.dims(), 0, axis), inner = prod(it.dims(), axis, it.rank());
    Tensor& y = ctx.alloc_output(0, vals.dtype(), out);
    fill_elems(vals, 0, y, 0, y.numel());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = idx[static_cast<size_t>(o * inner + i)];
        if (v < 0) v += depth;
        if (v >= 0 && v < depth) copy_elems(vals, 1, y, (o * depth + v) * inner + i, 1);
      }
  };
}

Kernel make_compress(const ir::Node& n) {
  const bool has_axis = n.has_attr("axis");
  const int64_t axis_attr = n.attr_int("axis", 0);
  return [=](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &c = ctx.in(1);
    check_movable(ctx.node(), x.dtype());
    if (c.dtype() != DType::Bool || c.rank() != 1)
      throw ModelError(ctx.node().describe() + ": Compress condition must be a 1-D bool tensor");
    const auto cond = c.data<bool>();
    std::vector<int64_t> dims = has_axis ? x.dims() : std::vector<int64_t>{x.numel()};
    const auto axis = static_cast<size_t>(
        has_axis ? normalize_axis(ctx.node(), axis_attr, static_cast<int64_t>(x.rank())) : 0);
    if (static_cast<int64_t>(cond.size()) > dims[axis])
      throw ModelError(ctx.node().describe() + ": Compress condition has " +
                       std::to_string(cond.size()) + " values for an axis of size " +
                       std::to_string(dims[axis]));
    std::vector<int64_t> keep;
    for (size_t i = 0; i < cond.size(); ++i)
      if (cond[i]) keep.push_back(static_cast<int64_t>(i));
    const int64_t outer = prod(dims, 0, axis), inner = prod(dims, axis + 1, dims.size()),
                  A = dims[axis];
    std::vector<int64_t> out = dims;
    out[axis] = static_cast<int64_t>(keep.size());
    Tensor& y = ctx.alloc_output(0, x.dtype(), out);
    const auto K = static_cast<int64_t>(keep.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < K; ++j)
        copy_elems(x, (o * A + keep[static_cast<size_t>(j)]) * inner, y, (o * K + j) * inner,
                   inner);
  };
}

void run_non_zero(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> hits;
  ir::dispatch<MCC_ALL_DTYPES>(x.dtype(), ctx.node().describe() + ": NonZero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto d = x.data<T>();
    for (size_t i = 0; i < d.size(); ++i)
      if (d[i] != T(0)) hits.push_back(static_cast<int64_t>(i));
  });
  // A scalar reports like a one-element vector (as ONNX Runtime does).
  const std::vector<int64_t> dims = x.rank() == 0 ? std::vector<int64_t>{1} : x.dims();
  const auto strides = contiguous_strides(dims);
  const auto nnz = static_cast<int64_t>(hits.size());
  auto y = ctx.alloc_output(0, DType::I64, {static_cast<int64_t>(dims.size()), nnz})
               .mutable_data<int64_t>();
  for (size_t d = 0; d < dims.size(); ++d)
    for (int64_t j = 0; j < nnz; ++j)
      y[d * static_cast<size_t>(nnz) + static_cast<size_t>(j)] =
          hits[static_cast<size_t>(j)] / strides[d] % dims[d];
}

// ---------------------------------------------------------------- Unique

/// Unique over `items` slices of `len` elements each, read from keys (item-major). Returns the
/// unique items (as first-occurrence item ids, in output order) and each item's group.
template <class T>
void unique_groups(const std::vector<T>& keys, int64_t items, int64_t len, bool sorted,
                   std::vector<int64_t>& firsts, std::vector<int64_t>& inverse,
                   std::vector<int64_t>& counts) {
  // Total order with NaN after every number and equal to itself.
  auto elem_less = [](const T& a, const T& b) {
    const bool na = !(a == a), nb = !(b == b);
    if (na || nb) return !na && nb;
    return a < b;
  };
  auto item_cmp = [&](int64_t a, int64_t b) {  // -1, 0, 1
    for (int64_t j = 0; j < len; ++j) {
      const T& x = keys[static_cast<size_t>(a * len + j)];
      const T& y = keys[static_cast<size_t>(b * len + j)];
      if (elem_less(x, y)) return -1;
      if (elem_less(y, x)) return 1;
    }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(items));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return item_cmp(a, b) < 0; });
  std::vector<int64_t> group_of(static_cast<size_t>(items));
  std::vector<int64_t> gfirst, gcount;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || item_cmp(order[i - 1], order[i]) != 0) {
      gfirst.push_back(order[i]);
      gcount.push_back(0);
    }
    group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(gfirst.size()) - 1;
    ++gcount.back();
  }
  // Output position of each group: sorted order, or order of first occurrence.
  std::vector<int64_t> gorder(gfirst.size());
  std::iota(gorder.begin(), gorder.end(), 0);
  if (!sorted)
    std::sort(gorder.begin(), gorder.end(), [&](int64_t a, int64_t b) {
      return gfirst[static_cast<size_t>(a)] < gfirst[static_cast<size_t>(b)];
    });
  std::vector<int64_t> pos(gfirst.size());
  for (size_t p = 0; p < gorder.size(); ++p)
    pos[static_cast<size_t>(gorder[p])] = static_cast<int64_t>(p);
  firsts.resize(gfirst.size());
  counts.resize(gfirst.size());
  for (size_t g = 0; g < gfirst.size(); ++g) {
    firsts[static_cast<size_t>(pos[g])] = gfirst[g];
    counts[static_cast<size_t>(pos[g])] = gcount[g];
  }
  inverse.resize(static_cast<size_t>(items));
  for (int64_t i = 0; i < items; ++i)
    inverse[static_cast<size_t>(i)] = pos[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
}

Kernel make_unique(const ir::Node& n) {
  const bool sorted = n.attr_int("sorted", 1) != 0;
  const bool has_axis = n.has_attr("axis");
  const int64_t axis_attr = n.attr_int("axis", 0);
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const std::vector<int64_t> dims = has_axis ? x.dims() : std::vector<int64_t>{x.numel()};
    const auto axis = static_cast<size_t>(
        has_axis ? normalize_axis(ctx.node(), axis_attr, static_cast<int64_t>(x.rank())) : 0);
    const int64_t outer = prod(dims, 0, axis), A = dims[axis],
                  inner = prod(dims, axis + 1, dims.size());
    const int64_t len = outer * inner;
    std::vector<int64_t> firsts, inverse, counts;
    auto run = [&](const auto* data, auto tag) {
      // bool keys are stored as uint8_t (no std::vector<bool>).
      using T0 = typename decltype(tag)::type;
      using T = std::conditional_t<std::is_same_v<T0, bool>, uint8_t, T0>;
      std::vector<T> keys(static_cast<size_t>(A * len));
      for (int64_t a = 0; a < A; ++a)
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i)
            keys[static_cast<size_t>(a * len + o * inner + i)] = data[(o * A + a) * inner + i];
      unique_groups<T>(keys, A, len, sorted, firsts, inverse, counts);
    };
    if (x.dtype() == DType::String)
      run(x.strings().data(), ir::TypeTag<std::string>{});
    else
      ir::dispatch<MCC_ALL_DTYPES>(x.dtype(), ctx.node().describe() + ": Unique", [&](auto tag) {
        using T = typename decltype(tag)::type;
        run(x.data<T>().data(), tag);
      });
    const auto U = static_cast<int64_t>(firsts.size());
    std::vector<int64_t> out = dims;
    out[axis] = U;
    Tensor& y = ctx.alloc_output(0, x.dtype(), out);
    for (int64_t u = 0; u < U; ++u)
      for (int64_t o = 0; o < outer; ++o)
        copy_elems(x, (o * A + firsts[static_cast<size_t>(u)]) * inner, y, (o * U + u) * inner,
                   inner);
    auto put = [&](size_t i, const std::vector<int64_t>& v) {
      if (!ctx.wants_output(i)) return;
      auto d =
          ctx.alloc_output(i, DType::I64, {static_cast<int64_t>(v.size())}).mutable_data<int64_t>();
      std::copy(v.begin(), v.end(), d.begin());
    };
    put(1, firsts);
    put(2, inverse);
    put(3, counts);
  };
}

}  // namespace

void register_gather_scatter(KernelRegistry& r) {
  r.add("Gather", 1, 0, make_gather);
  r.add("GatherElements", 11, 0, make_gather_elements);
  r.add("GatherND", 11, 0, make_gather_nd);
  r.add("Scatter", 9, 0, make_scatter_elements);
  r.add("ScatterElements", 11, 0, make_scatter_elements);
  r.add("ScatterND", 11, 0, make_scatter_nd);
  r.add("TensorScatter", 24, 0, make_tensor_scatter);
  r.add("OneHot", 9, 0, make_one_hot);
  r.add("Compress", 9, 0, make_compress);
  r.add("NonZero", 9, 0, stateless(run_non_zero));
  r.add("Unique", 11, 0, make_unique);
}

}  // namespace mcc::backends::cpu
