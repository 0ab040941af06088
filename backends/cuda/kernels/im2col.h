// im2col for the cuda backend's Conv: unfolds the windows of NC(DHW) images into a column matrix
// so that a conv becomes one gemm per group. Up to 3 spatial dims (1-D and 2-D convs pad the
// geometry with leading dims of size 1). f32 and f16.
#pragma once
#include <cstdint>

#include "backends/cuda/runtime/blas.h"

namespace mcc::cuda {

/// Window geometry of a conv over 3 spatial dims (unused leading dims: size 1, kernel 1, stride 1,
/// dilation 1, pad 0). pad holds the begin pads.
struct ConvWindow {
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

/// For each image i in [0, images), reading x + i * x_image_stride (channels x in_size values):
/// cols + i * channels * k_size * out_size holds the (channels * k_size) x out_size matrix whose
/// row c * k_size + kernel tap and column output position is the input value under that tap
/// (0 in the padding).
void im2col(GemmType type, const void* x, int64_t x_image_stride, int64_t images, int64_t channels,
            const ConvWindow& w, void* cols);

}  // namespace mcc::cuda
