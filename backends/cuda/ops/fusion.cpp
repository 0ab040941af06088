// Epilogue fusion for the cuda backend: a Conv or Gemm whose output is read only by an activation
// (Relu, Sigmoid, Clip with constant bounds, LeakyRelu, HardSigmoid, HardSwish, or SiLU as
// Sigmoid->Mul(x, sigmoid(x))) runs as one kernel that applies the activation in its bias
// epilogue; the executor skips the absorbed nodes. Matching is backends/fusion_match.h, shared
// with the cpu. Not fused: other followers, Clip bounds that are not scalar constants of the
// op's dtype, Gemm before opset 7.
#include <optional>

#include "backends/cuda/ops/matrix_ops.h"
#include "backends/fusion_match.h"

namespace mcc::backends::cuda {

namespace dev = ::mcc::cuda;

namespace {

dev::Activation to_activation(const ActivationMatch& m) {
  using A = ActivationMatch::Act;
  using K = dev::Activation::Kind;
  dev::Activation a;
  switch (m.act) {
    case A::Relu: a.kind = K::Relu; break;
    case A::Clip: a.kind = K::Clip; break;
    case A::Sigmoid: a.kind = K::Sigmoid; break;
    case A::SiLU: a.kind = K::SiLU; break;
    case A::LeakyRelu: a.kind = K::LeakyRelu; break;
    case A::HardSigmoid: a.kind = K::HardSigmoid; break;
    case A::HardSwish: a.kind = K::HardSwish; break;
  }
  a.alpha = m.alpha;
  a.beta = m.beta;
  return a;
}

// The element type of the op's second operand (W of a Conv, B of a Gemm) as the model states it.
ir::DType operand_dtype(const ir::Value* v) {
  return v->initializer ? v->initializer->dtype() : v->dtype;
}

}  // namespace

std::optional<FusedKernel> fuse(const ir::Node& n) {
  const bool conv = n.is("Conv"), gemm = n.is("Gemm") && n.since_version >= 7;
  if ((!conv && !gemm) || !one_output(n) || n.inputs.size() < 2 || !n.inputs[0] || !n.inputs[1])
    return std::nullopt;
  auto m = match_activation(n.outputs[0], operand_dtype(n.inputs[1]));
  if (!m) return std::nullopt;
  const dev::Activation act = to_activation(*m);
  FusedKernel fk;
  fk.kernel = conv ? make_conv_kernel(n, act) : make_gemm_kernel(n, act);
  fk.absorbed = m->nodes;
  fk.output = m->nodes.back()->outputs[0];
  return fk;
}

}  // namespace mcc::backends::cuda
