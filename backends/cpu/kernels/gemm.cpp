// Gemm (opsets 1, 6, 7, 9, 11, 13): Y = alpha * op(A) * op(B) + beta * C with transA/transB and
//   C unidirectionally broadcast to (M, N); dtypes f32, f64, f16, bf16 (f32 compute), i32, i64,
//   u32, u64 (native compute).
// MatMul (opsets 1, 9, 13): numpy matmul with batch broadcasting and 1-D operands; same dtypes.
// MatMulInteger (opset 10): u8/i8 x u8/i8 with per-tensor, per-row (A) and per-column (B) zero
//   points; int32 accumulation and output.
// QLinearMatMul (opsets 10, 21): u8/i8 operands, f32/f16/bf16 scales (per-tensor, per-row of A,
//   per-column of B), int32 accumulation, requantised with rounding half to even and saturation.
// All products go through Eigen GEMM split over the thread pool, except f32 MatMul with N >= 16 on
// AVX-512 builds: that uses the packed-panel GEMM of matmul_f32.cpp, with a constant (initializer)
// B packed once per kernel and kept. Not supported: Gemm's
// pre-opset-7 `broadcast=0` shape checks (C is always broadcast).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/matmul_f32.h"
#include "backends/cpu/kernels/nn_register.h"
#include "backends/kernel_shapes.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cpu {

namespace {

using ir::DType;

// Compute type of a storage type: f16/bf16 compute in f32, everything else natively.
template <class T>
using compute_t = std::conditional_t<std::is_arithmetic_v<T>, T, float>;

// A view of a tensor's values in compute type A: no copy when storage already is A.
template <class A, class T>
struct ComputeView {
  std::vector<A> owned;
  const A* ptr = nullptr;
  explicit ComputeView(const ir::Tensor& t) {
    if constexpr (std::is_same_v<A, T>)
      ptr = t.data<T>().data();
    else {
      owned = values_as<A, T>(t);
      ptr = owned.data();
    }
  }
};

std::string dims_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// ------------------------------------------------------------------ MatMul shapes

struct MatMulShape {
  int64_t M = 1, N = 1, K = 1;
  std::vector<int64_t> batch;                             // broadcast batch dims
  std::vector<int64_t> a_batch_strides, b_batch_strides;  // in matrices, per batch dim
  std::vector<int64_t> out_dims;
  int64_t batch_count = 1;
  bool b_shared = false;  // B has no batch: A's batches fold into rows of one GEMM
};

MatMulShape matmul_shape(const ir::Node& n, std::vector<int64_t> a, std::vector<int64_t> b) {
  const MatMulOperands ops = matmul_operands(n, std::move(a), std::move(b));
  a = ops.a;
  b = ops.b;
  MatMulShape s;
  s.M = ops.M;
  s.K = ops.K;
  s.N = ops.N;
  std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  s.batch = broadcast_shapes(n, ab, bb);
  s.a_batch_strides = broadcast_strides(ab, s.batch);
  s.b_batch_strides = broadcast_strides(bb, s.batch);
  for (int64_t d : s.batch) s.batch_count *= d;
  s.b_shared = true;
  for (int64_t d : bb) s.b_shared = s.b_shared && d == 1;
  bool a_full = true;  // A's batch dims equal the output's (no broadcasting of A)
  for (size_t i = 0; i < s.batch.size(); ++i) {
    const size_t off = s.batch.size() - ab.size();
    const int64_t ad = i < off ? 1 : ab[i - off];
    a_full = a_full && ad == s.batch[i];
  }
  s.b_shared = s.b_shared && a_full;
  s.out_dims = ops.out_dims(s.batch);
  return s;
}

// Offsets of batch i in A and B (in matrices) from the broadcast strides.
void batch_offsets(const MatMulShape& s, int64_t i, int64_t& oa, int64_t& ob) {
  oa = ob = 0;
  for (size_t d = s.batch.size(); d-- > 0;) {
    const int64_t idx = i % s.batch[d];
    i /= s.batch[d];
    oa += idx * s.a_batch_strides[d];
    ob += idx * s.b_batch_strides[d];
  }
}

// Y[batch] = A[batch] * B[batch] in type A (a, b, y contiguous).
template <class A>
void matmul_run(const KernelContext& ctx, const MatMulShape& s, const A* a, const A* b, A* y) {
  const int64_t M = s.M, N = s.N, K = s.K;
  if (s.batch_count == 0 || M == 0 || N == 0) return;
  if (s.b_shared) {
    gemm_parallel<A>(ctx, s.batch_count * M, N, K, a, K, false, b, N, false, y, N, false);
    return;
  }
  const int threads = ctx.num_threads();
  if (s.batch_count >= threads) {
    ctx.parallel_for(s.batch_count, M * N * K, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        int64_t oa, ob;
        batch_offsets(s, i, oa, ob);
        gemm_parallel<A>(ctx, M, N, K, a + oa * M * K, K, false, b + ob * K * N, N, false,
                         y + i * M * N, N, false);
      }
    });
  } else {
    for (int64_t i = 0; i < s.batch_count; ++i) {
      int64_t oa, ob;
      batch_offsets(s, i, oa, ob);
      gemm_parallel<A>(ctx, M, N, K, a + oa * M * K, K, false, b + ob * K * N, N, false,
                       y + i * M * N, N, false);
    }
  }
}

// A constant B packed on the first run of one MatMul kernel and kept for the next runs.
struct PackedCache {
  std::mutex mu;
  bool ready = false;
  PackedB b;
};

// Columns of B packed at a time when the packed copy is not kept (ExecOptions::keep_weight_copies
// off): a multiple of the 32-column panel.
constexpr int64_t kTransientPackColumns = 4096;

// Whether the packed-panel GEMM runs an f32 MatMul of this shape (it then writes every output).
bool matmul_packed_applies(const MatMulShape& s) {
  return matmul_f32_available() && s.N >= 16 && s.batch_count > 0 && s.M > 0;
}

// f32 MatMul through the packed-panel GEMM, where matmul_packed_applies.
void matmul_run_packed(const KernelContext& ctx, const MatMulShape& s, const float* a,
                       const float* b, float* y, PackedCache* cache) {
  const int64_t M = s.M, N = s.N, K = s.K;
  if (s.b_shared) {
    if (cache) {
      {
        std::lock_guard<std::mutex> lock(cache->mu);
        if (!cache->ready) {
          pack_b_f32(b, N, K, N, cache->b);
          cache->ready = true;
        }
      }
      matmul_packed_f32(ctx, s.batch_count * M, a, K, cache->b, y, N);
      return;
    }
    // Packed a band of columns at a time (a wide B would otherwise need a second whole copy on
    // every run). Bands are whole panels, so every output is computed as in one call.
    PackedB band;
    for (int64_t n0 = 0; n0 < N; n0 += kTransientPackColumns) {
      const int64_t cols = std::min(kTransientPackColumns, N - n0);
      pack_b_f32(b + n0, N, K, cols, band);
      matmul_packed_f32(ctx, s.batch_count * M, a, K, band, y + n0, N);
    }
    return;
  }
  const int threads = ctx.num_threads();
  if (s.batch_count > threads && s.batch_count % threads != 0 && M >= 24 * threads) {
    // Batches that do not split evenly over the threads (9 attention heads on 2): B of every batch
    // packed first, then each batch's rows in `threads` bands, so every thread gets the same work.
    std::vector<PackedB> packed(static_cast<size_t>(s.batch_count));
    ctx.parallel_for(s.batch_count, K * N, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        int64_t oa, ob;
        batch_offsets(s, i, oa, ob);
        pack_b_f32(b + ob * K * N, N, K, N, packed[static_cast<size_t>(i)]);
      }
    });
    const int64_t band = (M + threads - 1) / threads;
    ctx.parallel_for(s.batch_count * threads, band * N * K * 2, [&](int64_t lo, int64_t hi) {
      for (int64_t item = lo; item < hi; ++item) {
        const int64_t i = item / threads, r0 = item % threads * band, r1 = std::min(M, r0 + band);
        if (r0 >= r1) continue;
        int64_t oa, ob;
        batch_offsets(s, i, oa, ob);
        matmul_packed_f32(ctx, r1 - r0, a + oa * M * K + r0 * K, K, packed[static_cast<size_t>(i)],
                          y + i * M * N + r0 * N, N, false);
      }
    });
  } else if (s.batch_count >= threads) {
    ctx.parallel_for(s.batch_count, M * N * K * 2, [&](int64_t lo, int64_t hi) {
      PackedB pb;
      for (int64_t i = lo; i < hi; ++i) {
        int64_t oa, ob;
        batch_offsets(s, i, oa, ob);
        pack_b_f32(b + ob * K * N, N, K, N, pb);
        matmul_packed_f32(ctx, M, a + oa * M * K, K, pb, y + i * M * N, N, false);
      }
    });
  } else {
    PackedB pb;
    for (int64_t i = 0; i < s.batch_count; ++i) {
      int64_t oa, ob;
      batch_offsets(s, i, oa, ob);
      pack_b_f32(b + ob * K * N, N, K, N, pb);
      matmul_packed_f32(ctx, M, a + oa * M * K, K, pb, y + i * M * N, N);
    }
  }
}

template <class T, class A>
void store(ir::Tensor& y, const std::vector<A>& v) {
  auto o = y.mutable_data<T>();
  for (size_t i = 0; i < v.size(); ++i) o[i] = static_cast<T>(v[i]);
}

Kernel make_matmul(const ir::Node& node) {
  auto cache =
      node.inputs.size() > 1 && is_constant_value(node.input(1)) ? std::make_shared<PackedCache>() : nullptr;
  const std::string what = node.describe() + ": MatMul";  // dtype error context, built once
  return [cache, what](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& a = ctx.in(0);
    const ir::Tensor& b = ctx.in(1);
    if (a.dtype() != b.dtype())
      throw ModelError(n.describe() + ": MatMul operands must have the same dtype");
    const MatMulShape s = matmul_shape(n, a.dims(), b.dims());
    // A constant B whose packed copy is not kept takes Eigen's GEMM, which packs only the
    // cache-sized blocks it works on: packing all of B on every run costs more than it gains
    // (calibrating SmolLM2-135M took 2.6x as long).
    const bool unkept_constant = cache && !ctx.keeps_weight_copies();
    if (a.dtype() == DType::F32 && matmul_packed_applies(s) && !unkept_constant) {
      ir::Tensor& y = ctx.alloc_output_overwritten(0, a.dtype(), s.out_dims);
      matmul_run_packed(ctx, s, a.data<float>().data(), b.data<float>().data(),
                        y.mutable_data<float>().data(), cache.get());
      return;
    }
    ir::Tensor& y = ctx.alloc_output(0, a.dtype(), s.out_dims);
    ir::dispatch<DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                 DType::U32, DType::U64>(a.dtype(), what, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      ComputeView<A, T> av(a), bv(b);
      if constexpr (std::is_same_v<A, T>) {
        matmul_run<A>(ctx, s, av.ptr, bv.ptr, y.mutable_data<T>().data());
      } else {
        std::vector<A> yv(static_cast<size_t>(y.numel()));
        matmul_run<A>(ctx, s, av.ptr, bv.ptr, yv.data());
        store<T>(y, yv);
      }
    });
  };
}

// ------------------------------------------------------------------ Gemm

// f32 Gemm with a constant B and alpha 1 (a Linear layer) through the packed-panel GEMM: B (or
// B^T) packed on the first run and kept, C added after. False (nothing written) otherwise.
bool gemm_run_packed(KernelContext& ctx, const ir::Tensor& a, const ir::Tensor& b, bool ta, bool tb,
                     float alpha, float beta, const GemmDims& g, const std::vector<int64_t>& c_strides,
                     PackedCache* cache) {
  const int64_t M = g.M, N = g.N, K = g.K;
  if (!cache || ta || alpha != 1.f || a.dtype() != DType::F32 || b.dtype() != DType::F32 || M == 0 ||
      !matmul_packed_applies(MatMulShape{.M = M, .N = N, .K = K, .batch_count = 1}))
    return false;
  {
    std::lock_guard<std::mutex> lock(cache->mu);
    if (!cache->ready) {
      const float* bp = b.data<float>().data();
      if (tb) {  // B is [N, K]: pack its transpose
        std::vector<float> bt(static_cast<size_t>(K * N));
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < K; ++k) bt[static_cast<size_t>(k * N + n)] = bp[n * K + k];
        pack_b_f32(bt.data(), N, K, N, cache->b);
      } else {
        pack_b_f32(bp, N, K, N, cache->b);
      }
      cache->ready = true;
    }
  }
  ir::Tensor& y = ctx.alloc_output_overwritten(0, DType::F32, {M, N});
  float* out = y.mutable_data<float>().data();
  matmul_packed_f32(ctx, M, a.data<float>().data(), K, cache->b, out, N);
  if (!c_strides.empty() && beta != 0.f) {
    const float* c = ctx.in(2).data<float>().data();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) out[i * N + j] += beta * c[i * c_strides[0] + j * c_strides[1]];
  }
  return true;
}

Kernel make_gemm(const ir::Node& node) {
  const ir::GemmAttrs ga(node);
  const bool ta = ga.trans_a(), tb = ga.trans_b();
  const float alpha = ga.alpha(), beta = ga.beta();
  const std::string what = node.describe() + ": Gemm";  // dtype error context, built once
  auto cache = node.inputs.size() > 1 && is_constant_value(node.input(1)) ? std::make_shared<PackedCache>() : nullptr;
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& a = ctx.in(0);
    const ir::Tensor& b = ctx.in(1);
    const GemmDims g = gemm_dims(n, a.dims(), b.dims(), ta, tb);
    const int64_t M = g.M, N = g.N, K = g.K;
    if (a.dtype() != b.dtype())
      throw ModelError(n.describe() + ": Gemm A and B must have the same dtype");
    const bool has_c = ctx.has_input(2);
    std::vector<int64_t> c_strides;
    if (has_c) {
      const ir::Tensor& c = ctx.in(2);
      if (c.dtype() != a.dtype()) throw ModelError(n.describe() + ": Gemm C must have A's dtype");
      const std::vector<int64_t> out{M, N};
      if (c.rank() > 2 || broadcast_shapes(n, c.dims(), out) != out)
        throw ModelError(n.describe() + ": C of shape " + dims_str(c.dims()) +
                         " cannot be broadcast to [" + std::to_string(M) + "," + std::to_string(N) +
                         "]");
      c_strides = broadcast_strides(c.dims(), out);
    }
    if (gemm_run_packed(ctx, a, b, ta, tb, alpha, beta, g, c_strides, ctx.keeps_weight_copies() ? cache.get() : nullptr))
      return;
    ir::Tensor& y = ctx.alloc_output(0, a.dtype(), {M, N});
    ir::dispatch<DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                 DType::U32, DType::U64>(a.dtype(), what, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = compute_t<T>;
      ComputeView<A, T> av(a), bv(b);
      std::vector<A> owned;
      A* out;
      if constexpr (std::is_same_v<A, T>)
        out = y.mutable_data<T>().data();
      else {
        owned.resize(static_cast<size_t>(M * N));
        out = owned.data();
      }
      gemm_parallel<A>(ctx, M, N, K, av.ptr, ta ? M : K, ta, bv.ptr, tb ? K : N, tb, out, N, false);
      const A al = static_cast<A>(alpha), be = static_cast<A>(beta);
      if (alpha != 1.f)
        for (int64_t i = 0; i < M * N; ++i) out[i] *= al;
      if (has_c && beta != 0.f) {
        ComputeView<A, T> cv(ctx.in(2));
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            out[i * N + j] += be * cv.ptr[i * c_strides[0] + j * c_strides[1]];
      }
      if constexpr (!std::is_same_v<A, T>) store<T>(y, owned);
    });
  };
}

// ------------------------------------------------------------------ integer matmuls

// Values of an int8/uint8 tensor as int32 minus a zero point broadcast along `axis_len` rows
// (per-row, zp_per_row) or columns.
std::vector<int32_t> centered(const ir::Node& n, const ir::Tensor& t, const ir::Tensor* zp,
                              int64_t rows, int64_t cols, bool zp_per_row, const char* what) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  ir::dispatch<DType::U8, DType::I8>(t.dtype(), n.describe() + ": " + what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto d = t.data<T>();
    for (size_t i = 0; i < d.size(); ++i) v[i] = d[i];
  });
  if (!zp) return v;
  if (zp->dtype() != t.dtype())
    throw ModelError(n.describe() + ": zero point of " + what + " must have its dtype " +
                     ir::dtype_name(t.dtype()));
  std::vector<int32_t> z;
  ir::dispatch<DType::U8, DType::I8>(zp->dtype(), n.describe() + ": zero point", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T x : zp->data<T>()) z.push_back(x);
  });
  const int64_t per = zp_per_row ? rows : cols;
  if (z.size() == 1) {
    for (auto& x : v) x -= z[0];
  } else if (static_cast<int64_t>(z.size()) == per) {
    for (size_t i = 0; i < v.size(); ++i) {
      const int64_t r = (static_cast<int64_t>(i) / cols) % rows, c = static_cast<int64_t>(i) % cols;
      v[i] -= z[static_cast<size_t>(zp_per_row ? r : c)];
    }
  } else {
    throw ModelError(n.describe() + ": zero point of " + what + " must be a scalar or have " +
                     std::to_string(per) + " values, got " + std::to_string(z.size()));
  }
  return v;
}

// Rows and columns of the matrices of an operand as matmul sees it.
void mat_dims(const std::vector<int64_t>& d, bool is_a, int64_t& rows, int64_t& cols) {
  if (d.size() == 1) {
    rows = is_a ? 1 : d[0];
    cols = is_a ? d[0] : 1;
    return;
  }
  rows = d[d.size() - 2];
  cols = d.back();
}

void matmul_integer_kernel(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& a = ctx.in(0);
  const ir::Tensor& b = ctx.in(1);
  const MatMulShape s = matmul_shape(n, a.dims(), b.dims());
  int64_t ar, ac, br, bc;
  mat_dims(a.dims(), true, ar, ac);
  mat_dims(b.dims(), false, br, bc);
  const auto av = centered(n, a, ctx.has_input(2) ? &ctx.in(2) : nullptr, ar, ac, true, "A");
  const auto bv = centered(n, b, ctx.has_input(3) ? &ctx.in(3) : nullptr, br, bc, false, "B");
  ir::Tensor& y = ctx.alloc_output(0, DType::I32, s.out_dims);
  matmul_run<int32_t>(ctx, s, av.data(), bv.data(), y.mutable_data<int32_t>().data());
}

void qlinear_matmul_kernel(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& a = ctx.in(0);
  const ir::Tensor& b = ctx.in(3);
  const MatMulShape s = matmul_shape(n, a.dims(), b.dims());
  int64_t ar, ac, br, bc;
  mat_dims(a.dims(), true, ar, ac);
  mat_dims(b.dims(), false, br, bc);
  const auto av = centered(n, a, ctx.has_input(2) ? &ctx.in(2) : nullptr, ar, ac, true, "a");
  const auto bv = centered(n, b, ctx.has_input(5) ? &ctx.in(5) : nullptr, br, bc, false, "b");
  const auto as = read_float_tensor(n, ctx.in(1), "a_scale");
  const auto bs = read_float_tensor(n, ctx.in(4), "b_scale");
  const auto ys = read_float_tensor(n, ctx.in(6), "y_scale");
  if (ys.size() != 1) throw ModelError(n.describe() + ": y_scale must be a scalar");
  if (as.size() != 1 && static_cast<int64_t>(as.size()) != s.M)
    throw ModelError(n.describe() + ": a_scale must be a scalar or have one value per row of a");
  if (bs.size() != 1 && static_cast<int64_t>(bs.size()) != s.N)
    throw ModelError(n.describe() + ": b_scale must be a scalar or have one value per column of b");
  const DType out_dt = ctx.has_input(7) ? ctx.in(7).dtype() : a.dtype();
  std::vector<int32_t> acc(static_cast<size_t>(s.batch_count * s.M * s.N));
  matmul_run<int32_t>(ctx, s, av.data(), bv.data(), acc.data());
  ir::Tensor& y = ctx.alloc_output(0, out_dt, s.out_dims);
  ir::dispatch<DType::U8, DType::I8>(
      out_dt, n.describe() + ": QLinearMatMul output", [&](auto tag) {
        using T = typename decltype(tag)::type;
        double yzp = 0;
        if (ctx.has_input(7)) {
          auto z = ctx.in(7).data<T>();
          if (z.size() != 1) throw ModelError(n.describe() + ": y_zero_point must be a scalar");
          yzp = z[0];
        }
        auto out = y.mutable_data<T>();
        const double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
        for (size_t i = 0; i < acc.size(); ++i) {
          const int64_t col = static_cast<int64_t>(i) % s.N,
                        row = (static_cast<int64_t>(i) / s.N) % s.M;
          const float scale = as[as.size() == 1 ? 0 : row] * bs[bs.size() == 1 ? 0 : col] / ys[0];
          const double v =
              std::nearbyint(static_cast<double>(acc[i]) * static_cast<double>(scale) + yzp);
          out[i] = static_cast<T>(std::clamp(v, lo, hi));
        }
      });
}

}  // namespace

void register_gemm(KernelRegistry& r) {
  r.add("Gemm", 1, 0, make_gemm);
  r.add("MatMul", 1, 0, make_matmul);
  r.add("MatMulInteger", 10, 0, stateless(matmul_integer_kernel));
  r.add("QLinearMatMul", 10, 0, stateless(qlinear_matmul_kernel));
}

}  // namespace mcc::backends::cpu
