// Kernel-level fusion for the cpu backend: an f32 MatMul by a constant 2-D weight followed by a
// constant bias Add and, optionally, the erf GELU as exported from PyTorch
// (Div(v, c) -> Erf -> Add(., c) -> Mul(v, .) -> Mul(., c)). The graph is not changed: the cpu
// backend offers the fusion through Backend::fuse and the executor checks that nothing else reads
// the absorbed values. The bias and GELU are applied to each output row right after the GEMM, in
// the same order of f32 operations as the separate nodes. Other MatMuls are not fused.
#pragma once
#include <optional>

#include "backends/backend.h"

namespace mcc::backends::cpu {

/// The fusion starting at `n` (a MatMul), or nullopt when it does not apply.
std::optional<FusedKernel> fuse_matmul(const ir::Node& n);

}  // namespace mcc::backends::cpu
