// Row-block copies on the device for Concat and Split, element-size generic (1, 2, 4 or 8 bytes):
// every input (Concat) or output (Split) is a [rows, cols] block of a wider [rows, pitch] tensor.
// Plain C++ declarations; bodies in concat_split.cu.
// Does not apply to: strings, sub-byte types, 16-byte elements.
#pragma once
#include <cstdint>

namespace mcc::cuda {

/// dst[r * dst_pitch + c] = src[r * src_pitch + c] for r < rows, c < cols (pitches in elements;
/// the pointers already point at the block's first element).
void copy_rows(const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch, int64_t rows,
               int64_t cols, int elem_bytes);

}  // namespace mcc::cuda
