// Kernel-level fusion for the cpu backend: a Conv followed by nodes whose work fits in the
// conv's output loop (a per-channel constant Add, an inference BatchNormalization folded into the
// weights, then one activation: Relu, Clip, Sigmoid, SiLU as Sigmoid->Mul(x, sigmoid(x)),
// LeakyRelu, HardSigmoid, HardSwish). The graph is not changed: the cpu backend offers the fusion
// through Backend::fuse; the executor runs the fused kernel at the conv's position, skips the
// absorbed nodes and stores the kernel's output as the last absorbed node's output. Only f32
// convs are fused.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "backends/backend.h"

namespace mcc::backends::cpu {

/// What a conv applies to each output value after the bias: y = act(y + bias[channel]).
struct Epilogue {
  enum class Act { None, Relu, Clip, Sigmoid, SiLU, LeakyRelu, HardSigmoid, HardSwish };
  Act act = Act::None;
  float alpha = 0.f, beta = 0.f;  // Clip: [alpha, beta]; LeakyRelu: alpha; HardSigmoid: alpha, beta
  bool trivial() const { return act == Act::None; }
};

/// rows x cols values at y (row stride ld): y += bias[r] (bias may be null), then the activation.
template <class T>
void apply_epilogue(T* y, int64_t rows, int64_t cols, int64_t ld, const T* bias, const Epilogue& e);

/// The fusion starting at `n` (a Conv), or nullopt when nothing can be absorbed. A value is
/// absorbed only when its single reader is the next node of the chain in the same graph and it is
/// not a graph output; BatchNormalization, Add and Clip bounds must be constants (initializers or
/// Constant nodes with a `value` tensor).
std::optional<FusedKernel> fuse_conv(const ir::Node& n);

}  // namespace mcc::backends::cpu
