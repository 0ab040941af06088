// MaxPool and AveragePool kernels of the cuda backend over NC(DHW) planes, up to 3 spatial dims
// (1-D and 2-D pad the geometry with leading dims of size 1), one thread per output element.
// MaxPool: a window that holds no input element gives the lowest float (as the cpu). AveragePool:
// count_include_pad counts the padded taps inside [-pad_begin, in + pad_end). f32 and f16
// (accumulated in float).
#pragma once
#include <cstdint>

#include "backends/cuda/kernels/elem_type.h"

namespace mcc::cuda {

/// Window geometry over 3 spatial dims (unused leading dims: in 1, k 1, stride 1, dil 1, pads 0).
struct PoolWindow {
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad_b[3] = {0, 0, 0}, pad_e[3] = {0, 0, 0};
};

enum class PoolOp : uint8_t { Max, Average };

/// y (planes x out[0]*out[1]*out[2]) from x (planes x in[0]*in[1]*in[2]).
void pool(PoolOp op, ElemType type, const void* x, void* y, int64_t planes, const PoolWindow& w,
          bool count_include_pad);

}  // namespace mcc::cuda
