// Softmax and LogSoftmax kernels of the cuda backend over x viewed as outer x len x inner (the
// softmax axis in the middle; opsets 1-12 coerce to 2-D, which is inner = 1). One block per
// (outer, inner) line: max and sum of exponentials through block_max / block_sum, in float.
// f32 and f16.
#pragma once
#include <cstdint>

#include "backends/cuda/kernels/elem_type.h"

namespace mcc::cuda {

/// y = exp(x - max) / sum (log: x - max - log(sum)) along the middle dim of outer x len x inner.
void softmax(ElemType type, bool log, const void* x, void* y, int64_t outer, int64_t len, int64_t inner);

}  // namespace mcc::cuda
