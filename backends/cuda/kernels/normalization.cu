// BatchNormalization, LayerNormalization, InstanceNormalization and GroupNormalization kernels
// (see normalization.h). BatchNorm runs one block per (n, c) plane, deriving the channel's affine
// once; the others one block per row with a two-pass mean / variance through block_sum
// (InstanceNorm is GroupNorm with one channel per group).
#include "backends/cuda/kernels/normalization.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

MCC_HD inline float load_param(ParamRef r, int64_t i) {
  if (r.type == ElemType::F16) return to_float(static_cast<const half_t*>(r.p)[i]);
  return static_cast<const float*>(r.p)[i];
}

int block_threads(int64_t len) {
  const int64_t t = (len + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : (t > 256 ? 256 : t));
}

template <class T>
void batch_norm_t(const T* x, T* y, int64_t batch, int64_t channels, int64_t spatial, ParamRef scale,
                  ParamRef bias, ParamRef mean, ParamRef var, float eps) {
  for_each_block(batch * channels, block_threads(spatial), [=] MCC_DEVICE(BlockCtx c) {
    const int64_t ch = c.block % channels;
    const float a = static_cast<float>(static_cast<double>(load_param(scale, ch)) /
                                       sqrt(static_cast<double>(load_param(var, ch)) + static_cast<double>(eps)));
    const float b = static_cast<float>(static_cast<double>(load_param(bias, ch)) -
                                       static_cast<double>(load_param(mean, ch)) * static_cast<double>(a));
    const T* xs = x + c.block * spatial;
    T* ys = y + c.block * spatial;
    for (int64_t j = c.thread; j < spatial; j += c.threads) ys[j] = from_float<T>(to_float(xs[j]) * a + b);
  });
}

/// Mean and 1 / sqrt(var + eps) of one row, two passes through block_sum (every thread calls it).
template <class T>
MCC_DEVICE inline void row_stats(const T* xr, int64_t len, float eps, const BlockCtx& c, float& mean, float& inv) {
  float s = 0.f;
  for (int64_t j = c.thread; j < len; j += c.threads) s += to_float(xr[j]);
  mean = len > 0 ? block_sum(s, c) / static_cast<float>(len) : 0.f;
  float ss2 = 0.f;
  for (int64_t j = c.thread; j < len; j += c.threads) {
    const float d = to_float(xr[j]) - mean;
    ss2 += d * d;
  }
  const float var = len > 0 ? block_sum(ss2, c) / static_cast<float>(len) : 0.f;
  inv = 1.f / sqrtf(var + eps);
}

/// Group normalization of x viewed as batch x groups x (cpg channels x spatial): one block per
/// (n, g) row; parameters per channel (per_channel) or per group.
template <class T>
void group_norm_t(const T* x, T* y, int64_t batch, int64_t groups, int64_t cpg, int64_t spatial, bool per_channel,
                  ParamRef scale, ParamRef bias, float eps) {
  const int64_t len = cpg * spatial;
  for_each_block(batch * groups, block_threads(len), [=] MCC_DEVICE(BlockCtx c) {
    const T* xr = x + c.block * len;
    T* yr = y + c.block * len;
    float mean, inv;
    row_stats(xr, len, eps, c, mean, inv);
    const int64_t g = c.block % groups;
    for (int64_t j = c.thread; j < len; j += c.threads) {
      const int64_t k = per_channel ? g * cpg + j / spatial : g;
      yr[j] = from_float<T>((to_float(xr[j]) - mean) * inv * load_param(scale, k) + load_param(bias, k));
    }
  });
}

template <class T>
void layer_norm_t(const T* x, T* y, int64_t rows, int64_t len, ParamRef scale, Shape8 ss, ParamRef bias,
                  Shape8 bs, float eps, float* mean_out, float* inv_out) {
  for_each_block(rows, block_threads(len), [=] MCC_DEVICE(BlockCtx c) {
    const T* xr = x + c.block * len;
    T* yr = y + c.block * len;
    float mean, inv;
    row_stats(xr, len, eps, c, mean, inv);
    for (int64_t j = c.thread; j < len; j += c.threads) {
      const float g = load_param(scale, strided_offset(ss, j));
      const float b = bias.p ? load_param(bias, strided_offset(bs, j)) : 0.f;
      yr[j] = from_float<T>((to_float(xr[j]) - mean) * inv * g + b);
    }
    if (c.thread == 0) {
      if (mean_out) mean_out[c.block] = mean;
      if (inv_out) inv_out[c.block] = inv;
    }
  });
}

}  // namespace

void batch_norm(ElemType type, const void* x, void* y, int64_t batch, int64_t channels, int64_t spatial,
                ParamRef scale, ParamRef bias, ParamRef mean, ParamRef var, float eps) {
  if (batch * channels * spatial <= 0) return;
  if (type == ElemType::F16)
    batch_norm_t(static_cast<const half_t*>(x), static_cast<half_t*>(y), batch, channels, spatial, scale, bias,
                 mean, var, eps);
  else
    batch_norm_t(static_cast<const float*>(x), static_cast<float*>(y), batch, channels, spatial, scale, bias, mean,
                 var, eps);
}

void group_norm(ElemType type, const void* x, void* y, int64_t batch, int64_t groups, int64_t cpg, int64_t spatial,
                bool per_channel, ParamRef scale, ParamRef bias, float eps) {
  if (batch * groups <= 0) return;
  if (type == ElemType::F16)
    group_norm_t(static_cast<const half_t*>(x), static_cast<half_t*>(y), batch, groups, cpg, spatial, per_channel,
                 scale, bias, eps);
  else
    group_norm_t(static_cast<const float*>(x), static_cast<float*>(y), batch, groups, cpg, spatial, per_channel, scale,
                 bias, eps);
}

void instance_norm(ElemType type, const void* x, void* y, int64_t batch, int64_t channels, int64_t spatial,
                   ParamRef scale, ParamRef bias, float eps) {
  group_norm(type, x, y, batch, channels, 1, spatial, true, scale, bias, eps);
}

void layer_norm(ElemType type, const void* x, void* y, int64_t rows, int64_t len, ParamRef scale,
                const Shape8& scale_s, ParamRef bias, const Shape8& bias_s, float eps, float* mean_out,
                float* inv_out) {
  if (rows <= 0) return;
  if (type == ElemType::F16)
    layer_norm_t(static_cast<const half_t*>(x), static_cast<half_t*>(y), rows, len, scale, scale_s, bias, bias_s,
                 eps, mean_out, inv_out);
  else
    layer_norm_t(static_cast<const float*>(x), static_cast<float*>(y), rows, len, scale, scale_s, bias, bias_s,
                 eps, mean_out, inv_out);
}

}  // namespace mcc::cuda
