// Gemm (opset 7+) on the cuda backend: Y = alpha * op(A) * op(B) + beta * C with transA/transB,
// f32 or f16 (tensor cores, f32 accumulation). C (scalar, [N], [1,N], [M,1], [M,N], any shape
// that broadcasts to [M,N]) is written as beta * C into Y first, then one blas call accumulates
// onto it. Opsets before 7 (the `broadcast` attribute) stay on the cpu.
#include <string>
#include <vector>

#include "backends/cuda/kernels/gemm_epilogue.h"
#include "backends/cuda/ops/matrix_ops.h"
#include "backends/cuda/runtime/blas.h"
#include "backends/cuda/runtime/device_api.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cuda {

namespace dev = ::mcc::cuda;

dev::GemmType gemm_type(ir::DType dt) {
  return dt == ir::DType::F16 ? dev::GemmType::F16 : dev::GemmType::F32;
}

std::string same_float_inputs(const ir::Node& n, std::span<const ir::DType> dtypes) {
  ir::DType first = ir::DType::Undefined;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (i < n.inputs.size() && !n.inputs[i]) continue;
    const ir::DType dt = dtypes[i];
    if (dt != ir::DType::F32 && dt != ir::DType::F16)
      return "input " + std::to_string(i) + " is " +
             (dt == ir::DType::Undefined ? std::string("of unknown type") : ir::dtype_name(dt));
    if (first == ir::DType::Undefined) first = dt;
    else if (dt != first) return "inputs have different element types";
  }
  return {};
}

namespace {

// Element strides of C broadcast to [M, N] (0 along broadcast dims); throws ModelError when C
// does not broadcast.
void c_strides(const ir::Node& n, const std::vector<int64_t>& c, int64_t M, int64_t N,
               int64_t& rs, int64_t& cs) {
  const bool ok = c.size() <= 2 && (c.empty() || c.back() == 1 || c.back() == N) &&
                  (c.size() < 2 || c[0] == 1 || c[0] == M);
  if (!ok)
    throw ModelError(n.describe() + ": C of shape " + dims_text(c) + " cannot be broadcast to [" +
                     std::to_string(M) + "," + std::to_string(N) + "]");
  cs = !c.empty() && c.back() == N && N != 1 ? 1 : 0;
  const int64_t cols = c.empty() ? 1 : c.back();
  rs = c.size() == 2 && c[0] == M && M != 1 ? cols : 0;
}

}  // namespace

Kernel make_gemm_kernel(const ir::Node& node, dev::Activation act) {
  const ir::GemmAttrs ga(node);
  const bool ta = ga.trans_a(), tb = ga.trans_b();
  const float alpha = ga.alpha(), beta = ga.beta();
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& a = ctx.in(0);
    const ir::Tensor& b = ctx.in(1);
    const GemmDims g = gemm_dims(n, a.dims(), b.dims(), ta, tb);
    const int64_t M = g.M, N = g.N, K = g.K;
    const dev::GemmType type = gemm_type(a.dtype());
    const bool use_c = ctx.has_input(2) && beta != 0.f;
    int64_t rs = 0, cs = 0;
    if (ctx.has_input(2)) c_strides(n, ctx.in(2).dims(), M, N, rs, cs);
    ir::Tensor& y = ctx.alloc_output(0, a.dtype(), {M, N});
    if (M == 0 || N == 0) return;
    void* yp = y.mutable_device_data();
    if (use_c)
      dev::write_scaled_broadcast(type, yp, M, N, ctx.in(2).device_data(), rs, cs, beta);
    if (K > 0)
      dev::gemm(type, ta, tb, M, N, K, alpha, a.device_data(), ta ? M : K, 0, b.device_data(),
                tb ? K : N, 0, use_c ? 1.f : 0.f, yp, N, 0, 1);
    else if (!use_c)
      dev::fill_zero(yp, static_cast<size_t>(y.numel()) * ir::dtype_size(y.dtype()));
    dev::bias_activation(type, yp, 1, 1, M * N, nullptr, act);
  };
}

void register_gemm(OpTable& t) {
  t.add("Gemm", 7, 0, [](const ir::Node& n) { return make_gemm_kernel(n, {}); }, same_float_inputs);
}

}  // namespace mcc::backends::cuda
