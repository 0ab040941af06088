// Resize on the device as a separable gather: per resized axis the host builds, for every output
// coordinate, the input element offsets and weights of its taps (1 tap for nearest and for axes
// that are not resized, 2 for linear); the kernel sums the products over all tap combinations.
// Nearest is element-size generic (1, 2, 4 or 8 bytes); linear is f32 or f16 with f32
// accumulation. Plain C++ declarations; bodies in resize.cu.
// A negative offset marks an output coordinate outside the input (tf_crop_and_resize): every
// output element with such a coordinate gets the extrapolation value.
// Does not apply to: cubic, antialias, rank above kMaxResizeRank.
#pragma once
#include <cstdint>

namespace mcc::cuda {

constexpr int kMaxResizeRank = 8;
enum class ResizeElem : int { F32, F16 };

/// Output dims and where each axis' taps live in the offset/weight tables: the taps of output
/// coordinate c along d are entries table_start[d] + c * taps[d] + k, k < taps[d]. Offsets are
/// in input elements (index times the input stride of d), so an output element reads
/// src[sum over d of one offset per axis].
struct ResizeGeometry {
  int rank = 0;
  int64_t out_dims[kMaxResizeRank] = {};
  int taps[kMaxResizeRank] = {};
  int64_t table_start[kMaxResizeRank] = {};
};

/// dst[i] = src[sum_d offsets[table_start[d] + c_d]] (every taps[d] is 1), or the element whose
/// little-endian bits are `extrapolation` where an offset is negative. `offsets` is device memory.
void resize_nearest(const void* src, void* dst, const ResizeGeometry& g, const int64_t* offsets,
                    uint64_t extrapolation, int elem_bytes);

/// dst[i] = sum over tap combinations of (product of the taps' weights) * src[sum of offsets];
/// combinations with weight 0 are skipped; `extrapolation` where a coordinate's first offset is
/// negative. `offsets` and `weights` are device memory.
void resize_linear(const void* src, void* dst, const ResizeGeometry& g, const int64_t* offsets,
                   const float* weights, float extrapolation, ResizeElem elem);

}  // namespace mcc::cuda
