// Shared machinery of the elementwise and cast kernel files (unary.cpp, binary.cpp,
// variadic.cpp, where_clip.cpp, cast.cpp): per-file registration functions, the f16/bf16
// compute-type mapping and a broadcast plan that turns numpy broadcasting over up to three
// inputs into rows of one contiguous inner run (inner strides 0 or 1), so the hot loops are
// plain `y[i] = f(a[i], b[i])` loops the compiler vectorises.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/kernels.h"

namespace mcc::backends::cpu {

void register_unary(KernelRegistry& r);       // unary.cpp
void register_binary(KernelRegistry& r);      // binary.cpp
void register_variadic(KernelRegistry& r);    // variadic.cpp
void register_where_clip(KernelRegistry& r);  // where_clip.cpp
void register_cast_ops(KernelRegistry& r);    // cast.cpp

namespace ew {

template <class T>
inline constexpr bool kIsHalf = std::is_same_v<T, mcc::f16> || std::is_same_v<T, mcc::bf16>;
/// Type arithmetic happens in: f32 for f16/bf16 (STYLE 4.6), the storage type otherwise.
template <class T>
using compute_t = std::conditional_t<kIsHalf<T>, float, T>;

/// NaN test that compiles to `false` for integer types.
template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

/// double -> integer T with defined results everywhere (C++ leaves out-of-range UB): in-range
/// values truncate toward zero like a C cast; NaN and values beyond int64 go through INT64_MIN
/// (what x86's cvttsd2si gives numpy); narrower integer types wrap modulo 2^bits, as numpy's
/// astype does for in-range int64 values.
template <class T>
inline T float_to_int(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    if (v >= 9223372036854775808.0 && v < 18446744073709551616.0) return static_cast<uint64_t>(v);
    return static_cast<uint64_t>(float_to_int<int64_t>(v));
  } else {
    int64_t i = std::numeric_limits<int64_t>::min();
    if (v > -9223372036854775808.0 && v < 9223372036854775808.0) i = static_cast<int64_t>(v);
    return static_cast<T>(i);
  }
}

/// numpy broadcasting of up to 3 inputs to `out`, with dims collapsed: the output is
/// rows x inner, where input k advances by inner_stride[k] (0 or 1) along a row and starts each
/// row at row_offset(row)[k].
struct BroadcastPlan {
  int64_t numel = 0;
  int64_t inner = 1;
  std::array<int64_t, 3> inner_stride{0, 0, 0};
  std::vector<int64_t> outer_dims;                  // collapsed outer dims, row-major
  std::vector<std::array<int64_t, 3>> outer_strides;

  void row_offsets(int64_t row, int64_t* offs) const {
    offs[0] = offs[1] = offs[2] = 0;
    for (size_t d = outer_dims.size(); d-- > 0;) {
      const int64_t i = row % outer_dims[d];
      row /= outer_dims[d];
      for (int k = 0; k < 3; ++k) offs[k] += i * outer_strides[d][k];
    }
  }
};

/// Builds the plan for inputs of the given dims broadcast to `out` (which must be their numpy
/// broadcast; callers get it from broadcast_shapes).
inline BroadcastPlan make_plan(const std::vector<int64_t>& out,
                               const std::vector<const std::vector<int64_t>*>& ins) {
  BroadcastPlan p;
  p.numel = 1;
  for (int64_t d : out) p.numel *= d;
  const size_t k = ins.size();
  // Inputs all of the output's shape (the common case): one contiguous row.
  bool same = p.numel > 0;
  for (size_t j = 0; j < k && same; ++j) same = *ins[j] == out;
  if (same) {
    p.inner = p.numel;
    for (size_t j = 0; j < k && j < 3; ++j) p.inner_stride[j] = 1;
    return p;
  }
  std::vector<std::vector<int64_t>> st;
  for (const auto* d : ins) st.push_back(broadcast_strides(*d, out));
  // Drop size-1 output dims, then merge each dim into the next-inner one when every input
  // continues contiguously across the boundary (or is broadcast on both).
  std::vector<int64_t> dims;
  std::vector<std::array<int64_t, 3>> strides;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    std::array<int64_t, 3> s{0, 0, 0};
    for (size_t j = 0; j < k; ++j) s[j] = st[j][d];
    dims.push_back(out[d]);
    strides.push_back(s);
  }
  std::vector<int64_t> cd;
  std::vector<std::array<int64_t, 3>> cs;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!cd.empty()) {
      bool merge = true;
      for (size_t j = 0; j < k && merge; ++j) {
        const int64_t outer = cs.back()[j], inner = strides[d][j];
        merge = (outer == 0 && inner == 0) || (inner != 0 && outer == inner * dims[d]);
      }
      if (merge) {
        cd.back() *= dims[d];
        cs.back() = strides[d];
        continue;
      }
    }
    cd.push_back(dims[d]);
    cs.push_back(strides[d]);
  }
  if (cd.empty()) {  // scalar output (or all dims 1)
    p.inner = 1;
    p.inner_stride = {0, 0, 0};
    return p;
  }
  p.inner = cd.back();
  p.inner_stride = cs.back();
  for (auto& s : p.inner_stride) s = s != 0 ? 1 : 0;
  cd.pop_back();
  cs.pop_back();
  p.outer_dims = std::move(cd);
  p.outer_strides = std::move(cs);
  return p;
}

/// Walks [begin, end) of a plan's output one contiguous run at a time: run(offs, col, n, begin)
/// with the inputs' row offsets, the run's first column, its length and its first output index.
template <class R>
void for_each_run(const BroadcastPlan& p, int64_t begin, int64_t end, const R& run) {
  int64_t row = begin / p.inner, col = begin % p.inner;
  while (begin < end) {
    int64_t offs[3];
    p.row_offsets(row, offs);
    const int64_t n = std::min(p.inner - col, end - begin);
    run(offs, col, n, begin);
    begin += n;
    ++row;
    col = 0;
  }
}

/// Runs y[i] = f(a[ia], b[ib]) over a plan (parallel over the output). f works on storage types.
template <class TA, class TB, class TY, class F>
void run_binary(const KernelContext& ctx, const BroadcastPlan& p, const TA* a, const TB* b, TY* y,
                const F& f, int64_t cost = 1) {
  if (p.numel == 0) return;
  parallel_for_work(ctx, p.numel, cost, [&](int64_t begin, int64_t end) {
    for_each_run(p, begin, end, [&](const int64_t* offs, int64_t col, int64_t n, int64_t first) {
      const TA* pa = a + offs[0] + col * p.inner_stride[0];
      const TB* pb = b + offs[1] + col * p.inner_stride[1];
      TY* py = y + first;
      if (p.inner_stride[0] && p.inner_stride[1]) {
        for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i], pb[i]);
      } else if (p.inner_stride[0]) {
        const TB bv = *pb;
        for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i], bv);
      } else if (p.inner_stride[1]) {
        const TA av = *pa;
        for (int64_t i = 0; i < n; ++i) py[i] = f(av, pb[i]);
      } else {
        const TY v = f(*pa, *pb);
        for (int64_t i = 0; i < n; ++i) py[i] = v;
      }
    });
  });
}

/// run_binary for f16 storage: each contiguous run widened to f32 in blocks (half_convert.h),
/// fc(float, float) applied, the result rounded back to f16: the values of run_binary with a
/// widen / compute in f32 / narrow per element.
template <class F>
void run_binary_f16(const KernelContext& ctx, const BroadcastPlan& p, const f16* a, const f16* b, f16* y, const F& fc,
                    int64_t cost = 1) {
  if (p.numel == 0) return;
  parallel_for_work(ctx, p.numel, cost, [&](int64_t begin, int64_t end) {
    constexpr int64_t kChunk = 256;
    float fa[kChunk], fb[kChunk], fy[kChunk];
    for_each_run(p, begin, end, [&](const int64_t* offs, int64_t col, int64_t n, int64_t first) {
      const f16* pa = a + offs[0] + col * p.inner_stride[0];
      const f16* pb = b + offs[1] + col * p.inner_stride[1];
      const float av = static_cast<float>(*pa), bv = static_cast<float>(*pb);
      for (int64_t s = 0; s < n; s += kChunk) {
        const int64_t m = std::min(kChunk, n - s);
        if (p.inner_stride[0]) f16_to_f32(pa + s, fa, m);
        if (p.inner_stride[1]) f16_to_f32(pb + s, fb, m);
        for (int64_t i = 0; i < m; ++i)
          fy[i] = static_cast<float>(fc(p.inner_stride[0] ? fa[i] : av, p.inner_stride[1] ? fb[i] : bv));
        f32_to_f16(fy, y + first + s, m);
      }
    });
  });
}

/// Runs y[i] = f(c[ic], a[ia], b[ib]) over a 3-input plan.
template <class TC, class TA, class TB, class TY, class F>
void run_ternary(const KernelContext& ctx, const BroadcastPlan& p, const TC* c, const TA* a,
                 const TB* b, TY* y, const F& f) {
  if (p.numel == 0) return;
  parallel_for_work(ctx, p.numel, 1, [&](int64_t begin, int64_t end) {
    const int64_t s0 = p.inner_stride[0], s1 = p.inner_stride[1], s2 = p.inner_stride[2];
    for_each_run(p, begin, end, [&](const int64_t* offs, int64_t col, int64_t n, int64_t first) {
      const TC* pc = c + offs[0] + col * s0;
      const TA* pa = a + offs[1] + col * s1;
      const TB* pb = b + offs[2] + col * s2;
      TY* py = y + first;
      if (s0 && s1 && s2) {
        for (int64_t i = 0; i < n; ++i) py[i] = f(pc[i], pa[i], pb[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) py[i] = f(pc[i * s0], pa[i * s1], pb[i * s2]);
      }
    });
  });
}

/// "Add: dtype ..." style prefix for dispatch messages: node, then op.
inline std::string what(const ir::Node& n) { return n.describe(); }

}  // namespace ew
}  // namespace mcc::backends::cpu
