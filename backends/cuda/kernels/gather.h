// Gather on the device with indices in device memory, element-size generic data (1, 2, 4 or 8
// bytes), int32 or int64 indices. Plain C++ declarations; body in gather.cu.
// Negative indices count from the end. An index outside [-axis_len, axis_len) stores `error_site`
// in `*error_word` (runtime/device_errors.h: the run then fails naming the node, as on the cpu)
// and is clamped so the kernel never reads out of bounds.
// Does not apply to: strings, sub-byte types, 16-byte elements.
#pragma once
#include <cstdint>

namespace mcc::cuda {

/// data viewed as [outer, axis_len, inner], indices as [count]:
/// dst[(o * count + q) * inner + i] = data[(o * axis_len + index[q]) * inner + i].
void gather(const void* data, const void* indices, bool indices_are_int64, void* dst,
            int64_t outer, int64_t axis_len, int64_t count, int64_t inner, int elem_bytes, int32_t* error_word,
            int32_t error_site);

}  // namespace mcc::cuda
