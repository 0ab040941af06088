// Helpers shared by cpu kernels: broadcasting, strides, axis normalisation, float load/store
// for f16/bf16, and input-tensor readers for shape-like inputs.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/kernels/half_convert.h"

namespace mcc::backends::cpu {

/// Work (element operations, counted as parallel_for's cost_per_item counts them) below which a
/// kernel stays on the calling thread: a hand-off to a spinning pool thread costs a few
/// microseconds (tens when it has gone to sleep), more than splitting a few ten thousand cheap
/// element operations saves.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 16;

/// ctx.parallel_for, or f(0, n) on the calling thread when n * cost_per_item is below
/// kMinParallelWork. For kernels whose results do not depend on the split.
template <class F>
void parallel_for_work(const KernelContext& ctx, int64_t n, int64_t cost_per_item, const F& f) {
  if (n <= 0) return;
  if (ctx.num_threads() <= 1 || n * cost_per_item < kMinParallelWork) {
    f(int64_t{0}, n);
    return;
  }
  ctx.parallel_for(n, cost_per_item, f);
}

/// Accumulation type for a float storage type: f64 stays f64, f32/f16/bf16 compute in f32.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// Loads a stored value in compute type S (f16/bf16 go through f32).
template <class S, class T>
S cvt(T v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<S>(v);
  else
    return static_cast<S>(static_cast<float>(v));
}

/// A tensor's values as a vector of compute type S (f16/bf16 go through f32).
template <class S, class T>
std::vector<S> values_as(const ir::Tensor& t) {
  if constexpr (std::is_same_v<S, float> && std::is_same_v<T, f16>) return f16_values(t);
  auto d = t.data<T>();
  std::vector<S> v(d.size());
  for (size_t i = 0; i < d.size(); ++i) v[i] = cvt<S>(d[i]);
  return v;
}

/// Numpy-style broadcast of two shapes; throws ModelError naming the node on mismatch.
std::vector<int64_t> broadcast_shapes(const ir::Node& n, const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b);
/// Row-major strides of dims.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims);
/// Strides of `in` read as if broadcast to `out` (0 on broadcast dims; in is right-aligned).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);
/// Axis in [-rank, rank) to [0, rank); ModelError naming the node otherwise.
int64_t normalize_axis(const ir::Node& n, int64_t axis, int64_t rank);

/// Whether `v` holds the same value on every run: an initializer that is not a graph input, or the
/// output of a Constant node (kernels may cache what they derive from it).
bool is_constant_value(const ir::Value* v);
/// Reads an integer tensor (i32 or i64) as int64 values (shapes, axes, pads, indices).
std::vector<int64_t> read_int_tensor(const ir::Node& n, const ir::Tensor& t, const char* what);
/// Reads a float tensor (f32/f64/f16/bf16) as float values (scales, etc.).
std::vector<float> read_float_tensor(const ir::Node& n, const ir::Tensor& t, const char* what);

/// Iterates over every element index of `out` computing the flat offsets into up to 3 inputs
/// with broadcast strides; calls f(out_index, off0, off1, off2). Fast path when all contiguous.
template <class F>
void for_each_broadcast(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& in_strides, F&& f) {
  const size_t rank = out.size();
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total == 0) return;
  std::vector<int64_t> idx(rank, 0);
  int64_t offs[3] = {0, 0, 0};
  const size_t k = in_strides.size();
  for (int64_t i = 0; i < total; ++i) {
    f(i, offs[0], offs[1], offs[2]);
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      for (size_t j = 0; j < k; ++j) offs[j] += in_strides[j][d];
      if (idx[d] < out[d]) break;
      for (size_t j = 0; j < k; ++j) offs[j] -= in_strides[j][d] * idx[d];
      idx[d] = 0;
    }
  }
}

}  // namespace mcc::backends::cpu
