// Kernel-level fusion of LayerNorm as exporters write it decomposed (PyTorch's nn.LayerNorm
// before opset 17, PaddlePaddle, hand-written norms):
//   mean = ReduceMean(X, axes=[-1]); d = X - mean; var = ReduceMean(Pow(d, 2), axes=[-1]);
//   Y = d / Sqrt(var + eps) [* gamma] [+ beta]
// run as one pass per row instead of 7-9 kernels. Each step keeps the arithmetic of its own
// kernel (means summed in f64 in element order then divided, x*x for the square, f32 sub, add,
// div, mul), so the result equals the unfused nodes except for the square root: the Sqrt kernel
// takes Eigen's rsqrt+Newton estimate (up to 2 ulp) on 16-lane packets, the fused kernel the
// correctly rounded sqrt.
// Applies when: the reduced axis is the last (axes [-1], or [r-1] with the rank r known), keepdims
// is 1, the exponent is the f32 constant 2, eps is an f32 scalar constant, gamma and beta (when
// present) are f32 constants of rank <= 1, and every intermediate is read only inside the pattern.
// The graph is not changed: the cpu backend offers the fusion through Backend::fuse.
#pragma once
#include <optional>

#include "backends/backend.h"

namespace mcc::backends::cpu {

/// The decomposed LayerNorm starting at the ReduceMean `n`, or nullopt when it does not apply.
std::optional<FusedKernel> fuse_layer_norm(const ir::Node& n);

}  // namespace mcc::backends::cpu
