// Shape8: up to 8 dims with element strides, passed by value into kernels (broadcasting,
// transposes, slices), and strided_offset. Plain C++ so that kernel headers and host code can
// build one; launch.h includes it for the kernel bodies.
#pragma once
#include <cstdint>

#if !defined(MCC_HD)
#if defined(__CUDACC__) && !defined(MCC_CUDA_EMULATION)
#define MCC_HD __host__ __device__
#else
#define MCC_HD
#endif
#endif

namespace mcc::cuda {

constexpr int kMaxRank = 8;
/// Inputs are addressed through `strides` (0 for a broadcast dim).
struct Shape8 {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

/// Element offset of flat output index i (row-major over dims, i < the product of dims) under
/// `s`'s strides.
MCC_HD inline int64_t strided_offset(const Shape8& s, int64_t i) {
  if (s.rank == 1) return i * s.strides[0];  // the common collapsed case: no division
  int64_t off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t q = i / s.dims[d];
    off += (i - q * s.dims[d]) * s.strides[d];
    i = q;
  }
  return off;
}

}  // namespace mcc::cuda
