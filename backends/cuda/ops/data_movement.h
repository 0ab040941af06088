// Shared by the cuda backend's data-movement family (ops/shape_ops.cpp, concat_split.cpp,
// slice_pad.cpp, gather.cpp, resize.cpp): element widths, the strided copy with dim merging, the
// rank check, and the per-file registration functions that register_data_movement() calls.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/op_table.h"

namespace mcc::backends::cuda {

/// Bytes per element of a fixed-width dtype (1, 2, 4 or 8); 0 for anything else.
int elem_width(ir::DType dt);

/// Writes into y (contiguous, dims out_dims) the elements of x read at
/// offset + sum(i_k * strides[k]). Drops unit dims and merges dims that are contiguous in x,
/// so that any rank whose merged form fits the kernel (8 dims) works; ModelError otherwise.
void device_strided_copy(const ir::Node& n, const ir::Tensor& x, int64_t offset,
                         std::vector<int64_t> out_dims, std::vector<int64_t> strides, ir::Tensor& y);

/// Declines a node whose input `index` has a statically known rank above `max_rank`.
NodeCheck rank_at_most(int index, size_t max_rank);

/// The little-endian bits of element 0 of a host tensor of width 1, 2, 4 or 8 bytes.
uint64_t element_bits(const ir::Tensor& host);

void register_shape_ops(OpTable& t);    // Reshape, Flatten, Squeeze, Unsqueeze, Identity, Shape, Size, Constant, ConstantOfShape
void register_concat_split(OpTable& t); // Concat, Split, Transpose, DepthToSpace, SpaceToDepth, Expand, Tile
void register_slice_pad(OpTable& t);    // Slice, Pad
void register_gather(OpTable& t);       // Gather
void register_resize(OpTable& t);       // Resize

}  // namespace mcc::backends::cuda
