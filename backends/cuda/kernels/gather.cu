// Device body of Gather (see gather.h): one thread per output element.
#include "backends/cuda/kernels/gather.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace detail {

template <class W, class I>
void gather_as(const W* data, const I* indices, W* dst, int64_t outer, int64_t axis_len,
               int64_t count, int64_t inner, int32_t* error_word, int32_t error_site) {
  for_each(outer * count * inner, [=] MCC_DEVICE(int64_t i) {
    const int64_t e = i % inner, oq = i / inner;
    const int64_t q = oq % count, o = oq / count;
    int64_t k = static_cast<int64_t>(indices[q]);
    if (k < 0) k += axis_len;
    if (k < 0 || k >= axis_len) {
      *error_word = error_site;
      k = k < 0 ? 0 : axis_len - 1;
    }
    dst[i] = data[(o * axis_len + k) * inner + e];
  });
}

template <class W>
void gather_width(const void* data, const void* indices, bool idx64, void* dst, int64_t outer,
                  int64_t axis_len, int64_t count, int64_t inner, int32_t* err, int32_t site) {
  if (idx64)
    gather_as(static_cast<const W*>(data), static_cast<const int64_t*>(indices), static_cast<W*>(dst), outer,
              axis_len, count, inner, err, site);
  else
    gather_as(static_cast<const W*>(data), static_cast<const int32_t*>(indices), static_cast<W*>(dst), outer,
              axis_len, count, inner, err, site);
}

}  // namespace detail

void gather(const void* data, const void* indices, bool indices_are_int64, void* dst,
            int64_t outer, int64_t axis_len, int64_t count, int64_t inner, int elem_bytes, int32_t* error_word,
            int32_t error_site) {
  if (outer <= 0 || count <= 0 || inner <= 0 || axis_len <= 0) return;
  const auto run = [&](auto width_tag) {
    using W = decltype(width_tag);
    detail::gather_width<W>(data, indices, indices_are_int64, dst, outer, axis_len, count, inner, error_word,
                            error_site);
  };
  switch (elem_bytes) {
    case 1: run(uint8_t{}); break;
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    default: run(uint64_t{}); break;
  }
}

}  // namespace mcc::cuda
