// Device body of the row-block copy behind Concat and Split (see concat_split.h): one thread per
// element of the block.
#include "backends/cuda/kernels/concat_split.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace detail {

template <class W>
void copy_rows_as(const W* src, int64_t src_pitch, W* dst, int64_t dst_pitch, int64_t rows,
                  int64_t cols) {
  for_each(rows * cols, [=] MCC_DEVICE(int64_t i) {
    const int64_t r = i / cols, c = i - r * cols;
    dst[r * dst_pitch + c] = src[r * src_pitch + c];
  });
}

}  // namespace detail

void copy_rows(const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch, int64_t rows,
               int64_t cols, int elem_bytes) {
  if (rows <= 0 || cols <= 0) return;
  switch (elem_bytes) {
    case 1: detail::copy_rows_as(static_cast<const uint8_t*>(src), src_pitch, static_cast<uint8_t*>(dst), dst_pitch, rows, cols); break;
    case 2: detail::copy_rows_as(static_cast<const uint16_t*>(src), src_pitch, static_cast<uint16_t*>(dst), dst_pitch, rows, cols); break;
    case 4: detail::copy_rows_as(static_cast<const uint32_t*>(src), src_pitch, static_cast<uint32_t*>(dst), dst_pitch, rows, cols); break;
    default: detail::copy_rows_as(static_cast<const uint64_t*>(src), src_pitch, static_cast<uint64_t*>(dst), dst_pitch, rows, cols); break;
  }
}

}  // namespace mcc::cuda
