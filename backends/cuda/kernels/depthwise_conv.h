// Depthwise conv for the cuda backend (group == input channels): each output channel m reads only
// input channel m / (out_channels / in_channels), so it runs as a direct windowed sum instead of
// im2col + gemm. Up to 3 spatial dims (ConvWindow); no bias (the epilogue adds it). f32 and f16,
// f32 accumulation.
#pragma once
#include <cstdint>

#include "backends/cuda/kernels/im2col.h"

namespace mcc::cuda {

/// y (images x out_channels x out_size) from x (images x in_channels x in_size) and w
/// (out_channels x k_size); out_channels is a multiple of in_channels.
void depthwise_conv(GemmType type, const void* x, const void* w, void* y, int64_t images,
                    int64_t in_channels, int64_t out_channels, const ConvWindow& win);

}  // namespace mcc::cuda
