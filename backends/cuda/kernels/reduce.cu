// Reduction kernels (see reduce.h).
#include "backends/cuda/kernels/reduce.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

int block_threads(int64_t len) {
  const int64_t t = (len + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : (t > 256 ? 256 : t));
}

MCC_HD inline bool is_inf(float v) { return v == INFINITY || v == -INFINITY; }

/// The per-element term a sum-like reduction accumulates.
template <ReduceOp Op>
MCC_HD inline float term(float v) {
  if constexpr (Op == ReduceOp::L1) return fabsf(v);
  else if constexpr (Op == ReduceOp::L2 || Op == ReduceOp::SumSquare) return v * v;
  else return v;
}

template <ReduceOp Op>
MCC_HD inline float finish_sum(float s, int64_t num_red) {
  if constexpr (Op == ReduceOp::Mean) return s / static_cast<float>(num_red);
  else if constexpr (Op == ReduceOp::L2) return sqrtf(s);
  else if constexpr (Op == ReduceOp::LogSum) return logf(s);
  else return s;
}

/// The block's reduction of one output element (every thread of the block calls it).
template <ReduceOp Op, class T>
MCC_DEVICE inline float reduce_one(const T* base, const Shape8& red, int64_t num_red, const BlockCtx& c) {
  if constexpr (Op == ReduceOp::Max || Op == ReduceOp::Min) {
    constexpr float sign = Op == ReduceOp::Max ? 1.f : -1.f;
    float m = -INFINITY, nans = 0.f;
    for (int64_t j = c.thread; j < num_red; j += c.threads) {
      const float v = sign * to_float(base[strided_offset(red, j)]);
      if (v != v) nans += 1.f;
      else m = fmaxf(m, v);
    }
    m = block_max(m, c);
    nans = block_sum(nans, c);
    return nans > 0.f ? NAN : sign * m;
  } else if constexpr (Op == ReduceOp::LogSumExp) {
    float m = -INFINITY;
    for (int64_t j = c.thread; j < num_red; j += c.threads) m = fmaxf(m, to_float(base[strided_offset(red, j)]));
    m = block_max(m, c);
    float s = 0.f;
    if (!is_inf(m))
      for (int64_t j = c.thread; j < num_red; j += c.threads) s += fast_exp(to_float(base[strided_offset(red, j)]) - m);
    s = block_sum(s, c);
    return is_inf(m) ? m : m + logf(s);
  } else {
    float s = 0.f;
    for (int64_t j = c.thread; j < num_red; j += c.threads) s += term<Op>(to_float(base[strided_offset(red, j)]));
    return finish_sum<Op>(block_sum(s, c), num_red);
  }
}

template <ReduceOp Op, class T>
void reduce_block(const T* x, Shape8 kept, int64_t num_out, Shape8 red, int64_t num_red, T* y) {
  for_each_block(num_out, block_threads(num_red), [=] MCC_DEVICE(BlockCtx c) {
    const float r = reduce_one<Op, T>(x + strided_offset(kept, c.block), red, num_red, c);
    if (c.thread == 0) y[c.block] = from_float<T>(r);
  });
}

template <class T>
void reduce_prod_float(const T* x, Shape8 kept, int64_t num_out, Shape8 red, int64_t num_red, T* y) {
  for_each(num_out, [=] MCC_DEVICE(int64_t o) {
    const T* base = x + strided_offset(kept, o);
    double p = 1.0;
    for (int64_t j = 0; j < num_red; ++j) p *= static_cast<double>(to_float(base[strided_offset(red, j)]));
    y[o] = from_float<T>(static_cast<float>(p));
  });
}

template <ReduceOp Op, class T>
MCC_HD inline int64_t int_reduce(const T* base, Shape8 red, int64_t num_red) {
  if constexpr (Op == ReduceOp::Max || Op == ReduceOp::Min) {
    int64_t acc = Op == ReduceOp::Max ? (sizeof(T) == 4 ? INT32_MIN : INT64_MIN) : (sizeof(T) == 4 ? INT32_MAX : INT64_MAX);
    for (int64_t j = 0; j < num_red; ++j) {
      const int64_t v = base[strided_offset(red, j)];
      if (Op == ReduceOp::Max ? v > acc : v < acc) acc = v;
    }
    return acc;
  } else {
    uint64_t acc = Op == ReduceOp::Prod ? 1u : 0u;
    for (int64_t j = 0; j < num_red; ++j) {
      const auto v = static_cast<uint64_t>(static_cast<int64_t>(base[strided_offset(red, j)]));
      acc = Op == ReduceOp::Prod ? acc * v : acc + v;
    }
    const auto s = static_cast<int64_t>(acc);
    if constexpr (Op == ReduceOp::Mean) return num_red == 0 ? 0 : s / num_red;
    else return s;
  }
}

template <ReduceOp Op, class T>
void reduce_int(const T* x, Shape8 kept, int64_t num_out, Shape8 red, int64_t num_red, T* y) {
  for_each(num_out, [=] MCC_DEVICE(int64_t o) {
    y[o] = static_cast<T>(int_reduce<Op, T>(x + strided_offset(kept, o), red, num_red));
  });
}

template <ReduceOp Op>
void reduce_typed(ElemType type, const void* x, const Shape8& kept, int64_t num_out, const Shape8& red,
                  int64_t num_red, void* y) {
  auto run_float = [&](auto tag) {
    using T = decltype(tag);
    if constexpr (Op == ReduceOp::Prod)
      reduce_prod_float(static_cast<const T*>(x), kept, num_out, red, num_red, static_cast<T*>(y));
    else reduce_block<Op, T>(static_cast<const T*>(x), kept, num_out, red, num_red, static_cast<T*>(y));
  };
  constexpr bool kInt = Op == ReduceOp::Sum || Op == ReduceOp::Mean || Op == ReduceOp::Max ||
                        Op == ReduceOp::Min || Op == ReduceOp::Prod;
  switch (type) {
    case ElemType::F32: run_float(float{}); break;
    case ElemType::F16: run_float(half_t{}); break;
    case ElemType::I32:
      if constexpr (kInt) reduce_int<Op>(static_cast<const int32_t*>(x), kept, num_out, red, num_red, static_cast<int32_t*>(y));
      break;
    case ElemType::I64:
      if constexpr (kInt) reduce_int<Op>(static_cast<const int64_t*>(x), kept, num_out, red, num_red, static_cast<int64_t*>(y));
      break;
    default: break;
  }
}

/// a > b with NaN above every number (floats compared as float, ints as int64).
template <class V>
MCC_HD inline bool greater(V a, V b) {
  if constexpr (!std::is_integral_v<V>) {
    if (a != a) return b == b;
    if (b != b) return false;
  }
  return a > b;
}

template <class T>
MCC_HD inline auto load_compare(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<int64_t>(v);
  else return to_float(v);
}

template <class T>
void arg_reduce_t(bool is_max, bool last, const T* x, int64_t outer, int64_t len, int64_t inner, int64_t* y) {
  for_each(outer * inner, [=] MCC_DEVICE(int64_t r) {
    const int64_t base = (r / inner) * len * inner + r % inner;
    auto best = load_compare(x[base]);
    int64_t bi = 0;
    for (int64_t j = 1; j < len; ++j) {
      const auto v = load_compare(x[base + j * inner]);
      const bool better = is_max ? greater(v, best) : greater(best, v);
      const bool equal = !greater(v, best) && !greater(best, v);
      if (better || (last && equal)) {
        best = v;
        bi = j;
      }
    }
    y[r] = bi;
  });
}

}  // namespace

void arg_reduce(bool is_max, bool last, ElemType type, const void* x, int64_t outer, int64_t len, int64_t inner,
                int64_t* y) {
  if (outer * inner <= 0 || len <= 0) return;
  switch (type) {
    case ElemType::F32: arg_reduce_t(is_max, last, static_cast<const float*>(x), outer, len, inner, y); break;
    case ElemType::F16: arg_reduce_t(is_max, last, static_cast<const half_t*>(x), outer, len, inner, y); break;
    case ElemType::I32: arg_reduce_t(is_max, last, static_cast<const int32_t*>(x), outer, len, inner, y); break;
    case ElemType::I64: arg_reduce_t(is_max, last, static_cast<const int64_t*>(x), outer, len, inner, y); break;
    default: break;
  }
}

bool reduce_has_int(ReduceOp op) {
  return op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::Max || op == ReduceOp::Min ||
         op == ReduceOp::Prod;
}

void reduce(ReduceOp op, ElemType type, const void* x, const Shape8& kept, int64_t num_out, const Shape8& red,
            int64_t num_red, void* y) {
  if (num_out <= 0) return;
  switch (op) {
#define MCC_REDUCE_CASE(OP) \
  case ReduceOp::OP: reduce_typed<ReduceOp::OP>(type, x, kept, num_out, red, num_red, y); break;
    MCC_REDUCE_CASE(Sum) MCC_REDUCE_CASE(Mean) MCC_REDUCE_CASE(Max) MCC_REDUCE_CASE(Min)
    MCC_REDUCE_CASE(Prod) MCC_REDUCE_CASE(L1) MCC_REDUCE_CASE(L2) MCC_REDUCE_CASE(SumSquare)
    MCC_REDUCE_CASE(LogSum) MCC_REDUCE_CASE(LogSumExp)
#undef MCC_REDUCE_CASE
  }
}

}  // namespace mcc::cuda
