// MatMul by a DequantizeLinear of constant int8 codes, fused (see matmul_dequant.h).
#include "backends/cpu/kernels/matmul_dequant.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/matmul_f32.h"
#include "backends/fusion_match.h"
#include "ir/errors.h"

namespace mcc::backends::cpu {
namespace {

/// Most bytes of dequantized weight a lean run holds at once.
constexpr int64_t kBandBytes = int64_t{16} << 20;

/// The codes tensor behind v (a constant int8 or uint8), or null.
const ir::Tensor* int8_constant(const ir::Value* v) {
  if (const ir::Tensor* t = constant_of(v, ir::DType::I8)) return t;
  return constant_of(v, ir::DType::U8);
}

/// The weight as kept by a run that keeps copies: packed panels, or (no packed kernel here) the
/// dequantized rows.
struct KeptWeight {
  std::mutex mu;
  bool ready = false;
  PackedB packed;
  std::vector<float> rows;
};

/// W[:, n0:n1] of codes Q (element type T) dequantized into out (row stride n1 - n0).
template <class T>
void dequantize_columns_as(const KernelContext& ctx, const ir::Tensor& codes, const ir::Tensor& scale,
                           const ir::Tensor* zero_point, int64_t n0, int64_t n1, float* out) {
  const int64_t K = codes.dims()[0], N = codes.dims()[1], w = n1 - n0;
  const bool per_column = scale.numel() > 1;
  const float* s = scale.data<float>().data();
  const T* q = codes.data<T>().data();
  const T* zq = zero_point ? zero_point->data<T>().data() : nullptr;
  std::vector<float> z(static_cast<size_t>(scale.numel()), 0.f);
  if (zq) for (size_t i = 0; i < z.size(); ++i) z[i] = static_cast<float>(zq[i]);
  parallel_for_work(ctx, K, w, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const T* row = q + k * N + n0;
      float* o = out + k * w;
      if (per_column) {
        for (int64_t j = 0; j < w; ++j) o[j] = (static_cast<float>(row[j]) - z[n0 + j]) * s[n0 + j];
      } else {
        for (int64_t j = 0; j < w; ++j) o[j] = (static_cast<float>(row[j]) - z[0]) * s[0];
      }
    }
  });
}

void dequantize_columns(const KernelContext& ctx, const ir::Tensor& codes, const ir::Tensor& scale,
                        const ir::Tensor* zero_point, int64_t n0, int64_t n1, float* out) {
  if (codes.dtype() == ir::DType::I8) dequantize_columns_as<int8_t>(ctx, codes, scale, zero_point, n0, n1, out);
  else dequantize_columns_as<uint8_t>(ctx, codes, scale, zero_point, n0, n1, out);
}

}  // namespace

std::optional<FusedKernel> fuse_dequantized_matmul(const ir::Node& n) {
  if (!n.is("MatMul") || !one_output(n) || n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1])
    return std::nullopt;
  const ir::Node* dq = n.inputs[1]->producer;
  if (!dq || !dq->is("DequantizeLinear") || dq->owner != n.owner || !one_output(*dq) ||
      only_reader(n.inputs[1]) != &n || dq->inputs.size() < 2 || !known_f32(n.inputs[0]))
    return std::nullopt;
  if (dq->attr_int("block_size", 0) != 0 || (dq->attr_int("output_dtype", 0) != 0 &&
                                              dq->attr_int("output_dtype", 0) != static_cast<int64_t>(ir::DType::F32)))
    return std::nullopt;
  const ir::Tensor* codes = int8_constant(dq->inputs[0]);
  const ir::Tensor* scale = constant_of(dq->inputs[1], ir::DType::F32);
  if (!codes || codes->rank() != 2 || !scale) return std::nullopt;
  const int64_t K = codes->dims()[0], N = codes->dims()[1];
  const int64_t axis = dq->attr_int("axis", 1);
  const bool per_tensor = scale->numel() == 1 && scale->rank() <= 1;
  const bool per_column = scale->rank() == 1 && scale->numel() == N && (axis == 1 || axis == -1);
  if (!per_tensor && !per_column) return std::nullopt;
  const ir::Value* zp_value = dq->inputs.size() > 2 ? dq->inputs[2] : nullptr;
  if (zp_value) {
    const ir::Tensor* zp = constant_of(zp_value, codes->dtype());
    if (!zp || zp->numel() != scale->numel() || zp->rank() != scale->rank()) return std::nullopt;
  }
  FusedKernel fk;
  fk.output = n.outputs[0];
  fk.inputs = {n.inputs[0], dq->inputs[0], dq->inputs[1]};
  if (zp_value) fk.inputs.push_back(zp_value);
  auto kept = std::make_shared<KeptWeight>();
  fk.kernel = [K, N, kept](KernelContext& ctx) {
    const ir::Node& nd = ctx.node();
    const ir::Tensor& a = ctx.in(0);
    const ir::Tensor& codes = ctx.in(1);
    const ir::Tensor& scale = ctx.in(2);
    const ir::Tensor* zp = ctx.has_input(3) ? &ctx.in(3) : nullptr;
    if (a.dtype() != ir::DType::F32)
      throw ModelError(nd.describe() + ": MatMul A must be float32 like its dequantized weight, got " +
                       ir::dtype_name(a.dtype()));
    if (a.rank() < 1 || a.dims().back() != K)
      throw ModelError(nd.describe() + ": MatMul A must end in K=" + std::to_string(K));
    std::vector<int64_t> od = a.dims();
    od.back() = N;
    const int64_t M = K ? a.numel() / K : 0;
    ir::Tensor& y = ctx.alloc_output_overwritten(0, ir::DType::F32, od);
    float* yp = y.mutable_data<float>().data();
    const float* ap = a.data<float>().data();
    if (M == 0 || N == 0) return;
    if (ctx.keeps_weight_copies()) {
      {
        std::lock_guard<std::mutex> lock(kept->mu);
        if (!kept->ready) {
          std::vector<float> w(static_cast<size_t>(K * N));
          dequantize_columns(ctx, codes, scale, zp, 0, N, w.data());
          if (matmul_f32_available()) pack_b_f32(w.data(), N, K, N, kept->packed);
          else kept->rows = std::move(w);
          kept->ready = true;
        }
      }
      if (kept->rows.empty()) matmul_packed_f32(ctx, M, ap, K, kept->packed, yp, N);
      else gemm_parallel<float>(ctx, M, N, K, ap, K, false, kept->rows.data(), N, false, yp, N, false);
      return;
    }
    const int64_t band = std::min(N, std::max<int64_t>(64, kBandBytes / 4 / std::max<int64_t>(K, 1) / 64 * 64));
    std::vector<float> w(static_cast<size_t>(K * band));
    for (int64_t n0 = 0; n0 < N; n0 += band) {
      const int64_t cols = std::min(band, N - n0);
      dequantize_columns(ctx, codes, scale, zp, n0, n0 + cols, w.data());
      gemm_parallel<float>(ctx, M, cols, K, ap, K, false, w.data(), cols, false, yp + n0, N, false);
    }
  };
  return fk;
}

}  // namespace mcc::backends::cpu
