// Device body of Pad (see pad.h): one thread per output element maps each coordinate back into
// the input (reflect about the edges without repeating them, edge clamp, wrap) or writes the
// constant.
#include "backends/cuda/kernels/pad.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace detail {

/// Input coordinate for padded coordinate i (outside [0, dim)), or -1 for the constant.
MCC_HD inline int64_t pad_source(int64_t i, int64_t dim, PadMode mode) {
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return i < 0 ? 0 : dim - 1;
    case PadMode::Wrap: return ((i % dim) + dim) % dim;
    case PadMode::Reflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      int64_t r = ((i % period) + period) % period;
      return r >= dim ? period - r : r;
    }
  }
  return -1;
}

template <class W>
void pad_as(const W* src, W* dst, PadGeometry g, PadMode mode, W constant, int64_t n) {
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    int64_t rest = i, off = 0, stride = 1;
    bool outside = false;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t c = rest % g.out_dims[d];
      rest /= g.out_dims[d];
      int64_t s = c - g.before[d];
      if (s < 0 || s >= g.in_dims[d]) s = pad_source(s, g.in_dims[d], mode);
      if (s < 0) outside = true;
      off += s * stride;
      stride *= g.in_dims[d];
    }
    dst[i] = outside ? constant : src[off];
  });
}

}  // namespace detail

void pad(const void* src, void* dst, const PadGeometry& geometry, PadMode mode, uint64_t constant,
         int elem_bytes) {
  int64_t n = 1;
  for (int d = 0; d < geometry.rank; ++d) n *= geometry.out_dims[d];
  switch (elem_bytes) {
    case 1: detail::pad_as(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), geometry, mode, static_cast<uint8_t>(constant), n); break;
    case 2: detail::pad_as(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), geometry, mode, static_cast<uint16_t>(constant), n); break;
    case 4: detail::pad_as(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), geometry, mode, static_cast<uint32_t>(constant), n); break;
    default: detail::pad_as(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), geometry, mode, constant, n); break;
  }
}

}  // namespace mcc::cuda
