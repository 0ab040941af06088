// im2col (see im2col.h): one thread per column-matrix element; padded taps read 0.
#include "backends/cuda/kernels/im2col.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

template <class T>
void im2col_t(const T* x, int64_t x_image_stride, int64_t images, int64_t channels, ConvWindow w,
              T* cols) {
  const int64_t ks = w.k_size(), ps = w.out_size(), in_size = w.in_size();
  const int64_t per_image = channels * ks * ps;
  for_each(images * per_image, [=] MCC_DEVICE(int64_t i) {
    const int64_t img = i / per_image;
    int64_t r = i - img * per_image;
    const int64_t row = r / ps, p = r - (r / ps) * ps;
    const int64_t c = row / ks;
    int64_t tap = row - c * ks;
    int64_t pos = p;
    int64_t src = 0;
    bool inside = true;
    int64_t tap_idx[3], out_idx[3];
    for (int d = 2; d >= 0; --d) {
      tap_idx[d] = tap % w.k[d];
      tap /= w.k[d];
      out_idx[d] = pos % w.out[d];
      pos /= w.out[d];
    }
    for (int d = 0; d < 3; ++d) {
      const int64_t at = out_idx[d] * w.stride[d] - w.pad[d] + tap_idx[d] * w.dil[d];
      inside = inside && at >= 0 && at < w.in[d];
      src = src * w.in[d] + at;
    }
    cols[i] = inside ? x[img * x_image_stride + c * in_size + src] : from_float<T>(0.f);
  });
}

}  // namespace

void im2col(GemmType type, const void* x, int64_t x_image_stride, int64_t images, int64_t channels,
            const ConvWindow& w, void* cols) {
  if (type == GemmType::F16)
    im2col_t(static_cast<const half_t*>(x), x_image_stride, images, channels, w,
             static_cast<half_t*>(cols));
  else
    im2col_t(static_cast<const float*>(x), x_image_stride, images, channels, w,
             static_cast<float*>(cols));
}

}  // namespace mcc::cuda
