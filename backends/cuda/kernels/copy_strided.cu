// Device bodies of the strided copy, tile and fill kernels (see copy_strided.h). One thread per
// output element; the element is moved as an unsigned integer of its width.
#include "backends/cuda/kernels/copy_strided.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace detail {

template <class W>
void copy_strided_as(const W* src, int64_t offset, W* dst, Shape8 s, int64_t n) {
  for_each(n, [=] MCC_DEVICE(int64_t i) { dst[i] = src[offset + strided_offset(s, i)]; });
}

template <class W>
void tile_as(const W* src, W* dst, Shape8 out, Shape8 in, int64_t n) {
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    int64_t off = 0, rest = i;
    for (int d = out.rank - 1; d >= 0; --d) {
      const int64_t c = rest % out.dims[d];
      rest /= out.dims[d];
      off += (c % in.dims[d]) * in.strides[d];
    }
    dst[i] = src[off];
  });
}

template <class W>
void fill_as(W* dst, int64_t n, W v) {
  for_each(n, [=] MCC_DEVICE(int64_t i) { dst[i] = v; });
}

Shape8 make_shape(int rank, const int64_t* dims, const int64_t* strides) {
  Shape8 s;
  s.rank = rank;
  for (int d = 0; d < rank; ++d) {
    s.dims[d] = dims[d];
    s.strides[d] = strides ? strides[d] : 0;
  }
  return s;
}

int64_t count(int rank, const int64_t* dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= dims[d];
  return n;
}

}  // namespace detail

void copy_strided(const void* src, int64_t src_offset, void* dst, int rank, const int64_t* dims,
                  const int64_t* src_strides, int elem_bytes) {
  const Shape8 s = detail::make_shape(rank, dims, src_strides);
  const int64_t n = detail::count(rank, dims);
  switch (elem_bytes) {
    case 1: detail::copy_strided_as(static_cast<const uint8_t*>(src), src_offset, static_cast<uint8_t*>(dst), s, n); break;
    case 2: detail::copy_strided_as(static_cast<const uint16_t*>(src), src_offset, static_cast<uint16_t*>(dst), s, n); break;
    case 4: detail::copy_strided_as(static_cast<const uint32_t*>(src), src_offset, static_cast<uint32_t*>(dst), s, n); break;
    default: detail::copy_strided_as(static_cast<const uint64_t*>(src), src_offset, static_cast<uint64_t*>(dst), s, n); break;
  }
}

void tile(const void* src, void* dst, int rank, const int64_t* in_dims, const int64_t* out_dims,
          int elem_bytes) {
  const Shape8 out = detail::make_shape(rank, out_dims, nullptr);
  Shape8 in = detail::make_shape(rank, in_dims, nullptr);
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in.strides[d] = stride;
    stride *= in.dims[d];
  }
  const int64_t n = detail::count(rank, out_dims);
  switch (elem_bytes) {
    case 1: detail::tile_as(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), out, in, n); break;
    case 2: detail::tile_as(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), out, in, n); break;
    case 4: detail::tile_as(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), out, in, n); break;
    default: detail::tile_as(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), out, in, n); break;
  }
}

void fill(void* dst, int64_t n, uint64_t value, int elem_bytes) {
  switch (elem_bytes) {
    case 1: detail::fill_as(static_cast<uint8_t*>(dst), n, static_cast<uint8_t>(value)); break;
    case 2: detail::fill_as(static_cast<uint16_t*>(dst), n, static_cast<uint16_t>(value)); break;
    case 4: detail::fill_as(static_cast<uint32_t*>(dst), n, static_cast<uint32_t>(value)); break;
    default: detail::fill_as(static_cast<uint64_t*>(dst), n, value); break;
  }
}

}  // namespace mcc::cuda
