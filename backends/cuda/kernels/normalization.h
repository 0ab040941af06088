// Normalization kernels of the cuda backend: BatchNormalization (inference: per-channel affine
// from scale, bias, mean, var), LayerNormalization, InstanceNormalization and GroupNormalization
// (one block per row, statistics in float through block_sum). Data f32 or f16 (computed in float); parameters f32 or f16 each.
#pragma once
#include <cstdint>

#include "backends/cuda/kernels/elem_type.h"
#include "backends/cuda/runtime/shape8.h"

namespace mcc::cuda {

/// A parameter tensor on the device and its element type (p == nullptr: absent).
struct ParamRef {
  const void* p = nullptr;
  ElemType type = ElemType::F32;
};

/// y[n, c, s] = (x[n, c, s] - mean[c]) * scale[c] / sqrt(var[c] + eps) + bias[c] over
/// (batch, channels, spatial).
void batch_norm(ElemType type, const void* x, void* y, int64_t batch, int64_t channels, int64_t spatial,
                ParamRef scale, ParamRef bias, ParamRef mean, ParamRef var, float eps);

/// Per row r of x viewed as rows x len: y = (x - mean_r) * inv_r * scale + bias with
/// inv_r = 1 / sqrt(var_r + eps) (population variance). scale/bias are read at
/// strided_offset(s, j) for j in [0, len) (broadcast over the normalized dims); bias may be
/// absent. mean_out / inv_out (f32, rows values) are written when not null.
void layer_norm(ElemType type, const void* x, void* y, int64_t rows, int64_t len, ParamRef scale,
                const Shape8& scale_s, ParamRef bias, const Shape8& bias_s, float eps, float* mean_out,
                float* inv_out);

/// InstanceNormalization: per (n, c) row of x viewed as (batch * channels) x spatial,
/// y = (x - mean) / sqrt(var + eps) * scale[c] + bias[c] (population variance).
void instance_norm(ElemType type, const void* x, void* y, int64_t batch, int64_t channels, int64_t spatial,
                   ParamRef scale, ParamRef bias, float eps);

/// GroupNormalization: per (n, g) row of x viewed as batch x groups x (cpg * spatial), the
/// normalized value times scale plus bias, indexed by channel (per_channel) or by group.
void group_norm(ElemType type, const void* x, void* y, int64_t batch, int64_t groups, int64_t cpg, int64_t spatial,
                bool per_channel, ParamRef scale, ParamRef bias, float eps);

}  // namespace mcc::cuda
