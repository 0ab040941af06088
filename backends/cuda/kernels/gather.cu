// Device body of Gather (see gather.h): one thread per output element.
#include "backends/cuda/kernels/gather.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace detail {

template <class W, class I>
void gather_as(const W* data, const I* indices, W* dst, int64_t outer, int64_t axis_len,
               int64_t count, int64_t inner) {
  for_each(outer * count * inner, [=] MCC_DEVICE(int64_t i) {
    const int64_t e = i % inner, oq = i / inner;
    const int64_t q = oq % count, o = oq / count;
    int64_t k = static_cast<int64_t>(indices[q]);
    if (k < 0) k += axis_len;
    k = k < 0 ? 0 : (k >= axis_len ? axis_len - 1 : k);
    dst[i] = data[(o * axis_len + k) * inner + e];
  });
}

template <class W>
void gather_width(const void* data, const void* indices, bool idx64, void* dst, int64_t outer,
                  int64_t axis_len, int64_t count, int64_t inner) {
  if (idx64)
    gather_as(static_cast<const W*>(data), static_cast<const int64_t*>(indices), static_cast<W*>(dst), outer,
              axis_len, count, inner);
  else
    gather_as(static_cast<const W*>(data), static_cast<const int32_t*>(indices), static_cast<W*>(dst), outer,
              axis_len, count, inner);
}

}  // namespace detail

void gather(const void* data, const void* indices, bool indices_are_int64, void* dst,
            int64_t outer, int64_t axis_len, int64_t count, int64_t inner, int elem_bytes) {
  if (outer <= 0 || count <= 0 || inner <= 0 || axis_len <= 0) return;
  switch (elem_bytes) {
    case 1: detail::gather_width<uint8_t>(data, indices, indices_are_int64, dst, outer, axis_len, count, inner); break;
    case 2: detail::gather_width<uint16_t>(data, indices, indices_are_int64, dst, outer, axis_len, count, inner); break;
    case 4: detail::gather_width<uint32_t>(data, indices, indices_are_int64, dst, outer, axis_len, count, inner); break;
    default: detail::gather_width<uint64_t>(data, indices, indices_are_int64, dst, outer, axis_len, count, inner); break;
  }
}

}  // namespace mcc::cuda
