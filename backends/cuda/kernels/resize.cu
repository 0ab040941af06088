// Device bodies of Resize (see resize.h): one thread per output element walks the per-axis tap
// tables built on the host.
#include "backends/cuda/kernels/resize.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace detail {

int64_t output_count(const ResizeGeometry& g) {
  int64_t n = 1;
  for (int d = 0; d < g.rank; ++d) n *= g.out_dims[d];
  return n;
}

template <class W>
void nearest_as(const W* src, W* dst, ResizeGeometry g, const int64_t* offsets, W extrapolation, int64_t n) {
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    int64_t rest = i, off = 0;
    bool outside = false;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t c = rest % g.out_dims[d];
      rest /= g.out_dims[d];
      const int64_t o = offsets[g.table_start[d] + c];
      outside = outside || o < 0;
      off += o;
    }
    dst[i] = outside ? extrapolation : src[off];
  });
}

template <class T>
void linear_as(const T* src, T* dst, ResizeGeometry g, const int64_t* offsets, const float* weights,
               float extrapolation, int64_t n) {
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    int64_t coord[kMaxResizeRank];
    int64_t rest = i;
    int combos = 1;
    bool outside = false;
    for (int d = g.rank - 1; d >= 0; --d) {
      coord[d] = rest % g.out_dims[d];
      rest /= g.out_dims[d];
      combos *= g.taps[d];
      outside = outside || offsets[g.table_start[d] + coord[d] * g.taps[d]] < 0;
    }
    if (outside) {
      dst[i] = from_float<T>(extrapolation);
      return;
    }
    float acc = 0.f;
    for (int t = 0; t < combos; ++t) {
      int k = t;
      int64_t off = 0;
      float w = 1.f;
      for (int d = g.rank - 1; d >= 0; --d) {
        const int64_t e = g.table_start[d] + coord[d] * g.taps[d] + k % g.taps[d];
        k /= g.taps[d];
        off += offsets[e];
        w *= weights[e];
      }
      if (w != 0.f) acc += w * to_float(src[off]);
    }
    dst[i] = from_float<T>(acc);
  });
}

}  // namespace detail

void resize_nearest(const void* src, void* dst, const ResizeGeometry& g, const int64_t* offsets,
                    uint64_t extrapolation, int elem_bytes) {
  const int64_t n = detail::output_count(g);
  const uint64_t e = extrapolation;
  switch (elem_bytes) {
    case 1: detail::nearest_as(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), g, offsets, static_cast<uint8_t>(e), n); break;
    case 2: detail::nearest_as(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), g, offsets, static_cast<uint16_t>(e), n); break;
    case 4: detail::nearest_as(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), g, offsets, static_cast<uint32_t>(e), n); break;
    default: detail::nearest_as(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), g, offsets, e, n); break;
  }
}

void resize_linear(const void* src, void* dst, const ResizeGeometry& g, const int64_t* offsets,
                   const float* weights, float extrapolation, ResizeElem elem) {
  const int64_t n = detail::output_count(g);
  if (elem == ResizeElem::F16)
    detail::linear_as(static_cast<const half_t*>(src), static_cast<half_t*>(dst), g, offsets, weights, extrapolation, n);
  else
    detail::linear_as(static_cast<const float*>(src), static_cast<float*>(dst), g, offsets, weights, extrapolation, n);
}

}  // namespace mcc::cuda
