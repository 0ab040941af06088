// Kernel-level fusion of f32 elementwise chains for the cpu backend: a run of Add, Sub, Mul, Div
// and Clip nodes whose operands are the chain's input, values computed inside the chain, or f32
// scalar constants (HardSwish and HardSigmoid as exported decomposed, x * s + b affine steps,
// x / c scalings). The chain is evaluated in one pass over L1-sized blocks, each op in the same
// f32 arithmetic as its separate kernel, so results are bit-identical to the unfused nodes. The
// graph is not changed: the cpu backend offers the fusion through Backend::fuse. Chains that read
// another non-constant tensor (a broadcast bias, a second activation input), other dtypes, or
// intermediates read outside the chain are not fused (the chain stops before them).
#pragma once
#include <optional>

#include "backends/backend.h"

namespace mcc::backends::cpu {

/// The chain starting at `n`, or nullopt when fewer than two nodes would fuse.
std::optional<FusedKernel> fuse_elementwise_chain(const ir::Node& n);

}  // namespace mcc::backends::cpu
