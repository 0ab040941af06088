// Depthwise conv (see depthwise_conv.h): one thread per output value, the window summed in f32.
#include "backends/cuda/kernels/depthwise_conv.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

template <class T>
void depthwise_t(const T* x, const T* w, T* y, int64_t images, int64_t in_channels,
                 int64_t out_channels, ConvWindow win) {
  const int64_t ps = win.out_size(), ks = win.k_size(), in_size = win.in_size();
  const int64_t mult = out_channels / in_channels;
  for_each(images * out_channels * ps, [=] MCC_DEVICE(int64_t i) {
    const int64_t plane = i / ps, p = i - plane * ps;
    const int64_t img = plane / out_channels, m = plane - img * out_channels;
    const T* xc = x + (img * in_channels + m / mult) * in_size;
    const T* wm = w + m * ks;
    const int64_t o2 = p % win.out[2], o1 = (p / win.out[2]) % win.out[1],
                  o0 = p / (win.out[2] * win.out[1]);
    float acc = 0.f;
    for (int64_t k0 = 0; k0 < win.k[0]; ++k0) {
      const int64_t a0 = o0 * win.stride[0] - win.pad[0] + k0 * win.dil[0];
      if (a0 < 0 || a0 >= win.in[0]) continue;
      for (int64_t k1 = 0; k1 < win.k[1]; ++k1) {
        const int64_t a1 = o1 * win.stride[1] - win.pad[1] + k1 * win.dil[1];
        if (a1 < 0 || a1 >= win.in[1]) continue;
        for (int64_t k2 = 0; k2 < win.k[2]; ++k2) {
          const int64_t a2 = o2 * win.stride[2] - win.pad[2] + k2 * win.dil[2];
          if (a2 < 0 || a2 >= win.in[2]) continue;
          acc += to_float(xc[(a0 * win.in[1] + a1) * win.in[2] + a2]) *
                 to_float(wm[(k0 * win.k[1] + k1) * win.k[2] + k2]);
        }
      }
    }
    y[i] = from_float<T>(acc);
  });
}

}  // namespace

void depthwise_conv(GemmType type, const void* x, const void* w, void* y, int64_t images,
                    int64_t in_channels, int64_t out_channels, const ConvWindow& win) {
  if (type == GemmType::F16)
    depthwise_t(static_cast<const half_t*>(x), static_cast<const half_t*>(w),
                static_cast<half_t*>(y), images, in_channels, out_channels, win);
  else
    depthwise_t(static_cast<const float*>(x), static_cast<const float*>(w), static_cast<float*>(y),
                images, in_channels, out_channels, win);
}

}  // namespace mcc::cuda
