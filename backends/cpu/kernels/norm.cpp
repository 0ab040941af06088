// Normalization kernels. dtypes f32, f64, f16, bf16; f16/bf16/f32 compute in f32 (f64 in f64);
// statistics are accumulated in f64 for stability, variances are population variances.
//   BatchNormalization (opsets 1, 6, 7, 9, 14, 15): inference; training_mode=1 (opset >= 14)
//     normalizes with the batch statistics and returns running_mean/running_var. scale/B/mean/var
//     may have their own float dtype (opset 15). Not supported: spatial=0 (opsets < 9) and the
//     training outputs of opsets < 14.
//   InstanceNormalization (opsets 1, 6, 22).
//   LayerNormalization (opset 17): axis, epsilon, Scale/B broadcast over the normalized dims,
//     optional Mean and InvStdDev outputs (f32). f32 inputs take a vectorised row path (f64
//     statistics, f32 affine part).
//   GroupNormalization (opsets 18, 21): scale/bias per group (18) or per channel (21), chosen by
//     their size.
//   RMSNormalization (opset 23): axis, epsilon, scale broadcast over the normalized dims.
//   LRN (opsets 1, 13): across channels.
//   LpNormalization (opsets 1, 22): p in {1, 2}; a zero norm gives 0.
//   MeanVarianceNormalization (opsets 9, 13): axes (default [0, 2, 3]); (x - mean) / (std + 1e-9).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/nn_register.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cpu {

namespace {

using ir::DType;

std::vector<double> read_doubles(const ir::Node& n, const ir::Tensor& t, const char* what) {
  std::vector<double> v;
  ir::dispatch<MCC_FLOAT_DTYPES>(t.dtype(), n.describe() + ": " + what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T x : t.data<T>()) v.push_back(cvt<double>(x));
  });
  return v;
}

void write_doubles(const ir::Node& n, ir::Tensor& t, const std::vector<double>& v) {
  ir::dispatch<MCC_FLOAT_DTYPES>(t.dtype(), n.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto o = t.mutable_data<T>();
    for (size_t i = 0; i < v.size(); ++i) o[i] = static_cast<T>(static_cast<acc_t<T>>(v[i]));
  });
}

// y[n, c, s] = x[n, c, s] * a[c] + b[c] over (N, C, S) planes, parallel over planes.
template <class T>
void affine_planes(const KernelContext& ctx, const T* x, T* y, int64_t N, int64_t C, int64_t S,
                   const std::vector<double>& a, const std::vector<double>& b, bool per_plane) {
  using A = acc_t<T>;
  ctx.parallel_for(N * C, S, [&](int64_t lo, int64_t hi) {
    for (int64_t pl = lo; pl < hi; ++pl) {
      const size_t k = static_cast<size_t>(per_plane ? pl : pl % C);
      const A av = static_cast<A>(a[k]), bv = static_cast<A>(b[k]);
      const T* xs = x + pl * S;
      T* ys = y + pl * S;
      for (int64_t i = 0; i < S; ++i) ys[i] = static_cast<T>(cvt<A>(xs[i]) * av + bv);
    }
  });
}

// Mean and population variance of each of `groups` contiguous runs of length S.
template <class T>
void run_stats(const KernelContext& ctx, const T* x, int64_t groups, int64_t S,
               std::vector<double>& mean, std::vector<double>& var) {
  mean.assign(static_cast<size_t>(groups), 0.0);
  var.assign(static_cast<size_t>(groups), 0.0);
  ctx.parallel_for(groups, S, [&](int64_t lo, int64_t hi) {
    for (int64_t g = lo; g < hi; ++g) {
      const T* xs = x + g * S;
      double s = 0, ss = 0;
      for (int64_t i = 0; i < S; ++i) s += cvt<double>(xs[i]);
      const double m = S ? s / static_cast<double>(S) : 0.0;
      for (int64_t i = 0; i < S; ++i) {
        const double d = cvt<double>(xs[i]) - m;
        ss += d * d;
      }
      mean[static_cast<size_t>(g)] = m;
      var[static_cast<size_t>(g)] = S ? ss / static_cast<double>(S) : 0.0;
    }
  });
}

// Mean and population variance of n floats, accumulated in f64 (two passes; AVX-512 lanes when
// the CPU has them, in a fixed order).
#if MCC_X86
MCC_AVX512_BEGIN
void row_stats_f32_avx512(const float* x, int64_t n, double& mean, double& var) {
  mean = var = 0.0;
  if (n == 0) return;
  int64_t i = 0;
  double s = 0, ss = 0;
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  for (; i + 16 <= n; i += 16) {
    a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
    a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)));
  }
  s = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
  for (; i < n; ++i) s += x[i];
  mean = s / static_cast<double>(n);
  i = 0;
  const __m512d mv = _mm512_set1_pd(mean);
  a0 = _mm512_setzero_pd();
  a1 = _mm512_setzero_pd();
  for (; i + 16 <= n; i += 16) {
    const __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), mv);
    const __m512d d1 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)), mv);
    a0 = _mm512_fmadd_pd(d0, d0, a0);
    a1 = _mm512_fmadd_pd(d1, d1, a1);
  }
  ss = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
  for (; i < n; ++i) {
    const double d = x[i] - mean;
    ss += d * d;
  }
  var = ss / static_cast<double>(n);
}
MCC_AVX512_END
#endif

void row_stats_f32_portable(const float* x, int64_t n, double& mean, double& var) {
  mean = var = 0.0;
  if (n == 0) return;
  int64_t i = 0;
  double s = 0, ss = 0;
  for (; i < n; ++i) s += x[i];
  mean = s / static_cast<double>(n);
  i = 0;
  for (; i < n; ++i) {
    const double d = x[i] - mean;
    ss += d * d;
  }
  var = ss / static_cast<double>(n);
}

void row_stats_f32(const float* x, int64_t n, double& mean, double& var) {
#if MCC_X86
  if (cpu_avx512()) return row_stats_f32_avx512(x, n, mean, var);
#endif
  row_stats_f32_portable(x, n, mean, var);
}

int64_t spatial_size(const ir::Tensor& x) {
  int64_t s = 1;
  for (size_t i = 2; i < x.rank(); ++i) s *= x.dims()[i];
  return s;
}

// ------------------------------------------------------------------ BatchNormalization

Kernel make_batch_norm(const ir::Node& node) {
  const ir::BatchNormAttrs bn(node);
  const float eps = bn.epsilon();
  const float momentum = bn.momentum();
  const bool training = node.since_version >= 14 && bn.training_mode();
  if (bn.per_activation())
    throw UnsupportedError(
        node.describe() +
        ": BatchNormalization with spatial=0 is not supported by the cpu backend");
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() < 2) throw ModelError(n.describe() + ": X must have rank >= 2");
    const int64_t N = x.dims()[0], C = x.dims()[1], S = spatial_size(x);
    const auto scale = read_doubles(n, ctx.in(1), "scale"), bias = read_doubles(n, ctx.in(2), "B");
    auto mean = read_doubles(n, ctx.in(3), "mean"), var = read_doubles(n, ctx.in(4), "var");
    for (const std::vector<double>* v :
         {&scale, &bias, static_cast<const std::vector<double>*>(&mean),
          static_cast<const std::vector<double>*>(&var)})
      if (static_cast<int64_t>(v->size()) != C)
        throw ModelError(n.describe() + ": scale, B, mean and var must have " + std::to_string(C) +
                         " values");
    if (!training && n.since_version < 14)
      for (size_t i = 1; i < ctx.num_outputs(); ++i)
        if (ctx.wants_output(i))
          throw UnsupportedError(
              n.describe() +
              ": training outputs of BatchNormalization before opset 14 are not supported");
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": BatchNormalization", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xp = x.data<T>().data();
      std::vector<double> bm = mean, bv = var;
      if (training) {
        // Batch statistics per channel over N and the spatial dims.
        bm.assign(static_cast<size_t>(C), 0.0);
        bv.assign(static_cast<size_t>(C), 0.0);
        for (int64_t c = 0; c < C; ++c) {
          double s = 0, ss = 0;
          for (int64_t i = 0; i < N; ++i)
            for (int64_t j = 0; j < S; ++j) s += cvt<double>(xp[(i * C + c) * S + j]);
          const double m = s / static_cast<double>(std::max<int64_t>(N * S, 1));
          for (int64_t i = 0; i < N; ++i)
            for (int64_t j = 0; j < S; ++j) {
              const double d = cvt<double>(xp[(i * C + c) * S + j]) - m;
              ss += d * d;
            }
          bm[static_cast<size_t>(c)] = m;
          bv[static_cast<size_t>(c)] = ss / static_cast<double>(std::max<int64_t>(N * S, 1));
        }
      }
      std::vector<double> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
      for (size_t c = 0; c < a.size(); ++c) {
        a[c] = scale[c] / std::sqrt(bv[c] + static_cast<double>(eps));
        b[c] = bias[c] - bm[c] * a[c];
      }
      affine_planes<T>(ctx, xp, y.mutable_data<T>().data(), N, C, S, a, b, false);
      if (training) {
        for (size_t o = 1; o <= 2; ++o) {
          if (ctx.num_outputs() <= o || !ctx.wants_output(o)) continue;
          const auto& in = o == 1 ? mean : var;
          const auto& batch = o == 1 ? bm : bv;
          std::vector<double> run(in.size());
          for (size_t c = 0; c < run.size(); ++c)
            run[c] = in[c] * momentum + batch[c] * (1.0 - momentum);
          ir::Tensor& t = ctx.alloc_output(o, ctx.in(2 + o).dtype(), {C});
          write_doubles(n, t, run);
        }
      }
    });
  };
}

// ------------------------------------------------------------------ Instance / Group norm

Kernel make_instance_norm(const ir::Node& node) {
  const float eps = node.attr_float("epsilon", 1e-5f);
  return [eps](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() < 3) throw ModelError(n.describe() + ": X must have rank >= 3");
    const int64_t N = x.dims()[0], C = x.dims()[1], S = spatial_size(x);
    const auto scale = read_doubles(n, ctx.in(1), "scale"), bias = read_doubles(n, ctx.in(2), "B");
    if (static_cast<int64_t>(scale.size()) != C || static_cast<int64_t>(bias.size()) != C)
      throw ModelError(n.describe() + ": scale and B must have " + std::to_string(C) + " values");
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<MCC_FLOAT_DTYPES>(
        x.dtype(), n.describe() + ": InstanceNormalization", [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* xp = x.data<T>().data();
          std::vector<double> mean, var;
          run_stats<T>(ctx, xp, N * C, S, mean, var);
          std::vector<double> a(mean.size()), b(mean.size());
          for (size_t i = 0; i < a.size(); ++i) {
            const size_t c = i % static_cast<size_t>(C);
            a[i] = scale[c] / std::sqrt(var[i] + static_cast<double>(eps));
            b[i] = bias[c] - mean[i] * a[i];
          }
          affine_planes<T>(ctx, xp, y.mutable_data<T>().data(), N, C, S, a, b, true);
        });
  };
}

Kernel make_group_norm(const ir::Node& node) {
  const float eps = node.attr_float("epsilon", 1e-5f);
  const int64_t groups = node.attr_int("num_groups", 0);
  if (groups <= 0) throw ModelError(node.describe() + ": num_groups must be positive");
  return [eps, groups](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() < 2) throw ModelError(n.describe() + ": X must have rank >= 2");
    const int64_t N = x.dims()[0], C = x.dims()[1], S = spatial_size(x);
    if (C % groups != 0)
      throw ModelError(n.describe() + ": channels must be divisible by num_groups");
    const int64_t cpg = C / groups;
    const auto scale = read_doubles(n, ctx.in(1), "scale"),
               bias = read_doubles(n, ctx.in(2), "bias");
    const auto sz = static_cast<int64_t>(scale.size());
    if (sz != static_cast<int64_t>(bias.size()) || (sz != C && sz != groups))
      throw ModelError(n.describe() + ": scale and bias must have C or num_groups values");
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": GroupNormalization", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xp = x.data<T>().data();
      std::vector<double> mean, var;
      run_stats<T>(ctx, xp, N * groups, cpg * S, mean, var);
      std::vector<double> a(static_cast<size_t>(N * C)), b(a.size());
      for (int64_t i = 0; i < N * C; ++i) {
        const int64_t c = i % C, gi = (i / C) * groups + c / cpg;
        const size_t k = static_cast<size_t>(sz == C ? c : c / cpg);
        a[static_cast<size_t>(i)] =
            scale[k] / std::sqrt(var[static_cast<size_t>(gi)] + static_cast<double>(eps));
        b[static_cast<size_t>(i)] =
            bias[k] - mean[static_cast<size_t>(gi)] * a[static_cast<size_t>(i)];
      }
      affine_planes<T>(ctx, xp, y.mutable_data<T>().data(), N, C, S, a, b, true);
    });
  };
}

// ------------------------------------------------------------------ LayerNormalization

// x viewed as [outer, inner]: the dims before `axis` and the normalized dims from `axis` on.
struct AxisSplit {
  std::vector<int64_t> norm_dims;
  int64_t outer = 1, inner = 1;
  AxisSplit(const std::vector<int64_t>& dims, int64_t axis)
      : norm_dims(dims.begin() + axis, dims.end()) {
    for (size_t i = 0; i < dims.size(); ++i)
      (static_cast<int64_t>(i) < axis ? outer : inner) *= dims[i];
  }
};

// A per-element parameter (Scale, B) broadcast to the normalized shape, `inner` values.
std::vector<double> expand_to_normalized(const ir::Node& n, const ir::Tensor& t,
                                         const AxisSplit& sp, const char* what) {
  if (t.rank() > sp.norm_dims.size() ||
      broadcast_shapes(n, t.dims(), sp.norm_dims) != sp.norm_dims)
    throw ModelError(n.describe() + ": " + what + " cannot be broadcast to the normalized shape");
  const auto v = read_doubles(n, t, what);
  std::vector<double> e(static_cast<size_t>(sp.inner));
  for_each_broadcast(sp.norm_dims, {broadcast_strides(t.dims(), sp.norm_dims)},
                     [&](int64_t i, int64_t o, int64_t, int64_t) {
                       e[static_cast<size_t>(i)] = v[static_cast<size_t>(o)];
                     });
  return e;
}


Kernel make_layer_norm(const ir::Node& node) {
  const float eps = node.attr_float("epsilon", 1e-5f);
  const int64_t axis_attr = node.attr_int("axis", -1);
  return [eps, axis_attr](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const auto r = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(n, axis_attr, r);
    const AxisSplit sp(x.dims(), axis);
    const int64_t outer = sp.outer, inner = sp.inner;
    const auto scale = expand_to_normalized(n, ctx.in(1), sp, "Scale");
    const auto bias = ctx.has_input(2) ? expand_to_normalized(n, ctx.in(2), sp, "B")
                                       : std::vector<double>(static_cast<size_t>(inner), 0.0);
    std::vector<int64_t> stat_dims(x.dims().begin(), x.dims().begin() + axis);
    stat_dims.resize(static_cast<size_t>(r), 1);
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": LayerNormalization", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      const T* xp = x.data<T>().data();
      T* yp = y.mutable_data<T>().data();
      std::vector<double> mean, var;
      if constexpr (std::is_same_v<T, float>) {
        // f32: one pass per row over contiguous values, statistics in f64 (Eigen's vectorised,
        // fixed-order sums), the affine part in f32 vectors.
        mean.resize(static_cast<size_t>(outer));
        std::vector<double> inv(mean.size());
        const std::vector<float> sc(scale.begin(), scale.end()), bi(bias.begin(), bias.end());
        using Row = Eigen::Array<float, Eigen::Dynamic, 1>;
        const Eigen::Map<const Row> scm(sc.data(), inner), bim(bi.data(), inner);
        parallel_for_work(ctx, outer, inner * 4, [&](int64_t lo, int64_t hi) {
          for (int64_t o = lo; o < hi; ++o) {
            const Eigen::Map<const Row> xr(xp + o * inner, inner);
            double m, v;
            row_stats_f32(xp + o * inner, inner, m, v);
            mean[static_cast<size_t>(o)] = m;
            inv[static_cast<size_t>(o)] = 1.0 / std::sqrt(v + static_cast<double>(eps));
            const float mf = static_cast<float>(m), isf = static_cast<float>(inv[static_cast<size_t>(o)]);
            Eigen::Map<Row>(yp + o * inner, inner) = (xr - mf) * isf * scm + bim;
          }
        });
        if (ctx.num_outputs() > 1 && ctx.wants_output(1))
          write_doubles(n, ctx.alloc_output(1, DType::F32, stat_dims), mean);
        if (ctx.num_outputs() > 2 && ctx.wants_output(2))
          write_doubles(n, ctx.alloc_output(2, DType::F32, stat_dims), inv);
        return;
      }
      run_stats<T>(ctx, xp, outer, inner, mean, var);
      std::vector<double> inv(mean.size());
      for (size_t i = 0; i < inv.size(); ++i)
        inv[i] = 1.0 / std::sqrt(var[i] + static_cast<double>(eps));
      ctx.parallel_for(outer, inner, [&](int64_t lo, int64_t hi) {
        for (int64_t o = lo; o < hi; ++o) {
          const A m = static_cast<A>(mean[static_cast<size_t>(o)]),
                  is = static_cast<A>(inv[static_cast<size_t>(o)]);
          for (int64_t i = 0; i < inner; ++i)
            yp[o * inner + i] = static_cast<T>((cvt<A>(xp[o * inner + i]) - m) * is *
                                                   static_cast<A>(scale[static_cast<size_t>(i)]) +
                                               static_cast<A>(bias[static_cast<size_t>(i)]));
        }
      });
      if (ctx.num_outputs() > 1 && ctx.wants_output(1))
        write_doubles(n, ctx.alloc_output(1, DType::F32, stat_dims), mean);
      if (ctx.num_outputs() > 2 && ctx.wants_output(2))
        write_doubles(n, ctx.alloc_output(2, DType::F32, stat_dims), inv);
    });
  };
}

// ------------------------------------------------------------------ RMSNormalization

Kernel make_rms_norm(const ir::Node& node) {
  const float eps = node.attr_float("epsilon", 1e-5f);
  const int64_t axis_attr = node.attr_int("axis", -1);
  return [eps, axis_attr](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const int64_t axis = normalize_axis(n, axis_attr, static_cast<int64_t>(x.rank()));
    const AxisSplit sp(x.dims(), axis);
    const int64_t outer = sp.outer, inner = sp.inner;
    const auto scale = expand_to_normalized(n, ctx.in(1), sp, "scale");
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": RMSNormalization", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      const T* xp = x.data<T>().data();
      T* yp = y.mutable_data<T>().data();
      ctx.parallel_for(outer, inner, [&](int64_t lo, int64_t hi) {
        for (int64_t o = lo; o < hi; ++o) {
          const T* xs = xp + o * inner;
          double ss = 0;
          for (int64_t i = 0; i < inner; ++i) ss += cvt<double>(xs[i]) * cvt<double>(xs[i]);
          const auto inv =
              static_cast<A>(1.0 / std::sqrt(ss / static_cast<double>(std::max<int64_t>(inner, 1)) +
                                             static_cast<double>(eps)));
          for (int64_t i = 0; i < inner; ++i)
            yp[o * inner + i] =
                static_cast<T>(cvt<A>(xs[i]) * inv * static_cast<A>(scale[static_cast<size_t>(i)]));
        }
      });
    });
  };
}

// ------------------------------------------------------------------ LRN, LpNormalization, MVN

Kernel make_lrn(const ir::Node& node) {
  const int64_t size = node.attr_int("size", 0);
  const float alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
              bias = node.attr_float("bias", 1.f);
  if (size <= 0) throw ModelError(node.describe() + ": size must be positive");
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() < 3) throw ModelError(n.describe() + ": X must have rank >= 3");
    const int64_t N = x.dims()[0], C = x.dims()[1], S = spatial_size(x);
    const int64_t lo_off = (size - 1) / 2, hi_off = size - 1 - lo_off;
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": LRN", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      const T* xp = x.data<T>().data();
      T* yp = y.mutable_data<T>().data();
      ctx.parallel_for(N * C, S * size, [&](int64_t b, int64_t e) {
        for (int64_t pl = b; pl < e; ++pl) {
          const int64_t ni = pl / C, c = pl % C;
          const int64_t c0 = std::max<int64_t>(0, c - lo_off),
                        c1 = std::min<int64_t>(C - 1, c + hi_off);
          for (int64_t s = 0; s < S; ++s) {
            A sq = 0;
            for (int64_t cc = c0; cc <= c1; ++cc) {
              const A v = cvt<A>(xp[(ni * C + cc) * S + s]);
              sq += v * v;
            }
            const A v = cvt<A>(xp[pl * S + s]);
            yp[pl * S + s] =
                static_cast<T>(v / std::pow(static_cast<A>(bias) +
                                                static_cast<A>(alpha) / static_cast<A>(size) * sq,
                                            static_cast<A>(beta)));
          }
        }
      });
    });
  };
}

Kernel make_lp_norm(const ir::Node& node) {
  const int64_t axis_attr = node.attr_int("axis", -1), p = node.attr_int("p", 2);
  if (p != 1 && p != 2)
    throw ModelError(node.describe() + ": p must be 1 or 2, got " + std::to_string(p));
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const auto r = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(n, axis_attr, r);
    int64_t outer = 1, len = x.dims()[static_cast<size_t>(axis)], inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.dims()[static_cast<size_t>(i)];
    for (int64_t i = axis + 1; i < r; ++i) inner *= x.dims()[static_cast<size_t>(i)];
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": LpNormalization", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      const T* xp = x.data<T>().data();
      T* yp = y.mutable_data<T>().data();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t base = o * len * inner + i;
          A norm = 0;
          for (int64_t k = 0; k < len; ++k) {
            const A v = cvt<A>(xp[base + k * inner]);
            norm += p == 1 ? std::abs(v) : v * v;
          }
          if (p == 2) norm = std::sqrt(norm);
          for (int64_t k = 0; k < len; ++k)
            yp[base + k * inner] =
                static_cast<T>(norm != 0 ? cvt<A>(xp[base + k * inner]) / norm : A(0));
        }
    });
  };
}

Kernel make_mvn(const ir::Node& node) {
  const std::vector<int64_t> axes_attr = node.attr_ints("axes", {0, 2, 3});
  return [axes_attr](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const auto r = static_cast<int64_t>(x.rank());
    std::vector<bool> reduced(static_cast<size_t>(r), false);
    for (int64_t a : axes_attr) reduced[static_cast<size_t>(normalize_axis(n, a, r))] = true;
    std::vector<int64_t> kept_dims = x.dims();
    for (int64_t i = 0; i < r; ++i)
      if (reduced[static_cast<size_t>(i)]) kept_dims[static_cast<size_t>(i)] = 1;
    int64_t kept = 1;
    for (int64_t d : kept_dims) kept *= d;
    const auto ks = broadcast_strides(kept_dims, x.dims());
    const int64_t count = kept ? x.numel() / kept : 0;
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<MCC_FLOAT_DTYPES>(
        x.dtype(), n.describe() + ": MeanVarianceNormalization", [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* xp = x.data<T>().data();
          T* yp = y.mutable_data<T>().data();
          std::vector<double> sum(static_cast<size_t>(kept), 0.0),
              sq(static_cast<size_t>(kept), 0.0);
          for_each_broadcast(x.dims(), {ks}, [&](int64_t i, int64_t k, int64_t, int64_t) {
            sum[static_cast<size_t>(k)] += cvt<double>(xp[i]);
          });
          for (auto& s : sum) s /= static_cast<double>(std::max<int64_t>(count, 1));
          for_each_broadcast(x.dims(), {ks}, [&](int64_t i, int64_t k, int64_t, int64_t) {
            const double d = cvt<double>(xp[i]) - sum[static_cast<size_t>(k)];
            sq[static_cast<size_t>(k)] += d * d;
          });
          for (auto& s : sq)
            s = std::sqrt(s / static_cast<double>(std::max<int64_t>(count, 1))) + 1e-9;
          for_each_broadcast(x.dims(), {ks}, [&](int64_t i, int64_t k, int64_t, int64_t) {
            yp[i] = static_cast<T>(static_cast<acc_t<T>>(
                (cvt<double>(xp[i]) - sum[static_cast<size_t>(k)]) / sq[static_cast<size_t>(k)]));
          });
        });
  };
}

}  // namespace

void register_norm(KernelRegistry& r) {
  r.add("BatchNormalization", 1, 0, make_batch_norm);
  r.add("InstanceNormalization", 1, 0, make_instance_norm);
  r.add("LayerNormalization", 17, 0, make_layer_norm);
  r.add("GroupNormalization", 18, 0, make_group_norm);
  r.add("RMSNormalization", 23, 0, make_rms_norm);
  r.add("LRN", 1, 0, make_lrn);
  r.add("LpNormalization", 1, 0, make_lp_norm);
  r.add("MeanVarianceNormalization", 9, 0, make_mvn);
}

}  // namespace mcc::backends::cpu
