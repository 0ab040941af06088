// Strided copies, tiling and fills on the device, element-size generic (1, 2, 4 or 8 bytes):
// Transpose, Slice, Expand, Split views, Tile and ConstantOfShape are built on these. Plain C++
// declarations (no CUDA types); the bodies are in copy_strided.cu.
// Does not apply to: more than kMaxCopyRank dims (callers merge dims first), strings, sub-byte
// types, 16-byte elements.
#pragma once
#include <cstdint>

namespace mcc::cuda {

constexpr int kMaxCopyRank = 8;

/// dst[i] = src[src_offset + sum_k idx_k(i) * src_strides[k]] for every i of dst, where idx(i)
/// is i's row-major multi-index over dims. Offsets and strides count elements; strides may be 0
/// (broadcast) or negative (reversal). rank <= kMaxCopyRank.
void copy_strided(const void* src, int64_t src_offset, void* dst, int rank, const int64_t* dims,
                  const int64_t* src_strides, int elem_bytes);

/// dst (dims out_dims) = src (dims in_dims) repeated along every dim: dst[c] = src[c mod in_dims].
/// rank <= kMaxCopyRank; every in_dims entry > 0 when dst is not empty.
void tile(const void* src, void* dst, int rank, const int64_t* in_dims, const int64_t* out_dims,
          int elem_bytes);

/// Writes the element whose little-endian bits are `value` to dst[0, n).
void fill(void* dst, int64_t n, uint64_t value, int elem_bytes);

}  // namespace mcc::cuda
