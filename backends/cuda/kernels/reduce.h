// Reduction kernels of the cuda backend (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/
// LogSumExp, and the global pools through them). The input is addressed as kept dims x reduced
// dims, each a Shape8 over the input's strides, so any set of axes reduces without a transpose.
// f32/f16: one block per output element, accumulation in float through block_sum / block_max
// (Max/Min propagate NaN); Prod runs one thread per output in double. i32/i64 (Sum, Mean, Max,
// Min, Prod): one thread per output in int64 with wrap-around. Empty reductions give the
// operation's identity (0, 1, -inf, +inf; Mean: NaN for floats, 0 for ints). ArgMax/ArgMin:
// one thread per output walking the axis.
#pragma once
#include <cstdint>

#include "backends/cuda/kernels/elem_type.h"
#include "backends/cuda/runtime/shape8.h"

namespace mcc::cuda {

enum class ReduceOp : uint8_t { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

/// True when `op` has an i32/i64 kernel.
bool reduce_has_int(ReduceOp op);

/// y[o] = op over r in [0, num_red) of x[strided_offset(kept, o) + strided_offset(red, r)], for o
/// in [0, num_out); y holds `type`.
void reduce(ReduceOp op, ElemType type, const void* x, const Shape8& kept, int64_t num_out, const Shape8& red,
            int64_t num_red, void* y);

/// ArgMax (is_max) / ArgMin along the middle dim of x viewed as outer x len x inner (len > 0):
/// y[o * inner + i] (int64) is the index of the first extreme value (the last with `last`); NaN
/// compares above every number. f32, f16, i32, i64; one thread per output.
void arg_reduce(bool is_max, bool last, ElemType type, const void* x, int64_t outer, int64_t len, int64_t inner,
                int64_t* y);

}  // namespace mcc::cuda
