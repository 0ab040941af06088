// Where, Clip, Cast and broadcast copy kernels of the cuda backend, one thread per element.
// Where moves bytes (any element of 1, 2, 4 or 8 bytes) under a bool condition with numpy
// broadcasting; Clip: f32, f16, i32, i64; Cast: between f32, f16, i32, i64, bool, u8 and i8 with
// the cpu's rules (float -> float rounds to nearest even; float -> int truncates, NaN and out of
// int64 range give INT64_MIN then wrap to the target width; int -> int wraps; -> bool is != 0).
#pragma once
#include <cstdint>

#include "backends/cuda/kernels/elem_type.h"
#include "backends/cuda/runtime/shape8.h"

namespace mcc::cuda {

/// y[i] = cond[oc(i)] ? x[ox(i)] : z[oz(i)] for i in [0, n), elements of elem_bytes bytes.
void where(int elem_bytes, const void* cond, const Shape8& sc, const void* x, const Shape8& sx, const void* z,
           const Shape8& sz, void* y, int64_t n);

/// y[i] = x[ox(i)] for i in [0, n) (broadcast or strided copy), elements of elem_bytes bytes.
void broadcast_copy(int elem_bytes, const void* x, const Shape8& sx, void* y, int64_t n);

/// Bounds of Clip in the element type's own domain (lo_f/hi_f for float types, lo_i/hi_i for ints).
/// lo_dev/hi_dev, when set, point at a device scalar of the input's type that replaces the bound
/// (Clip-11+ min/max inputs are read by the kernel, so a constant bound stays on the device).
struct ClipBounds {
  float lo_f, hi_f;
  int64_t lo_i, hi_i;
  const void* lo_dev = nullptr;
  const void* hi_dev = nullptr;
};
/// y = min(max(x, lo), hi) as the cpu computes it: NaN passes through, lo > hi gives hi.
void clip(ElemType type, const void* x, void* y, int64_t n, const ClipBounds& b);

/// y[i] = cast(x[i]) from `from` to `to`.
void cast(ElemType from, ElemType to, const void* x, void* y, int64_t n);

}  // namespace mcc::cuda
