// MatMulNBits (com.microsoft 1, ONNX Runtime's contrib op): Y[..., n] = sum_k A[..., k] * W[n, k]
// (+ bias[n]), W block-quantized along K. B uint8 [N, k_blocks, blob_size] holds `bits`-bit codes
// (2, 4 or 8) packed lowest bits first; k_blocks = ceil(K / block_size), blob_size = block_size *
// bits / 8; W[n, k] = (q[n, k] - zp[n, b]) * scale[n, b] with b = k / block_size. scales are
// [N * k_blocks] or [N, k_blocks] of A's dtype. zero_points: absent (2^(bits-1)), uint8 packed
// per row like B ([N * ceil(k_blocks * bits / 8)] or 2-D), or A's dtype ([N * k_blocks] or 2-D).
// Codes of the last block past K are ignored. A is f32 or f16 (computed in f32), rank >= 1, last
// dim K; the output is A's dims with the last replaced by N.
// When B, scales, zero points and g_idx are initializers, W is dequantized once (on the first
// run) into a float [N, K] matrix kept by the kernel, and every run is one Eigen GEMM (as MatMul);
// otherwise W is dequantized on each run. accuracy_level does not change results.
// Not supported: a g_idx (input 4) other than the trivial order g_idx[k] = k / block_size
// (act-order models), refused with a ModelError; bf16.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/nn_register.h"
#include "ir/errors.h"
#include "ir/float16.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;

constexpr const char* kMsDomain = "com.microsoft";

std::string dims_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

/// Attributes of a MatMulNBits node, checked once when the kernel is created.
struct NBitsAttrs {
  int64_t K = 0, N = 0, bits = 4, block_size = 0;
  int64_t k_blocks = 0, blob_size = 0, zp_blob = 0;  // derived

  explicit NBitsAttrs(const ir::Node& n) {
    for (const char* req : {"K", "N", "block_size"})
      if (!n.has_attr(req)) throw ModelError(n.describe() + ": MatMulNBits needs attribute " + req);
    K = n.attr_int("K", 0);
    N = n.attr_int("N", 0);
    bits = n.attr_int("bits", 4);
    block_size = n.attr_int("block_size", 0);
    n.attr_int("accuracy_level", 0);  // checked for its kind only; results do not depend on it
    constexpr int64_t kMaxDim = int64_t{1} << 40;
    if (K < 1 || K > kMaxDim || N < 1 || N > kMaxDim)
      throw ModelError(n.describe() + ": MatMulNBits K and N must be in [1, 2^40], got K=" +
                       std::to_string(K) + " N=" + std::to_string(N));
    if (bits != 2 && bits != 4 && bits != 8)
      throw ModelError(n.describe() + ": MatMulNBits bits must be 2, 4 or 8, got " +
                       std::to_string(bits));
    if (block_size < 16 || block_size > (int64_t{1} << 20) || (block_size & (block_size - 1)) != 0)
      throw ModelError(n.describe() +
                       ": MatMulNBits block_size must be a power of 2 in [16, 2^20], got " +
                       std::to_string(block_size));
    k_blocks = (K + block_size - 1) / block_size;
    blob_size = block_size * bits / 8;
    zp_blob = (k_blocks * bits + 7) / 8;
  }
};

/// The inputs that define W, validated against the attributes.
struct WeightInputs {
  const ir::Tensor* b = nullptr;
  const ir::Tensor* scales = nullptr;
  const ir::Tensor* zp = nullptr;    // may be null
  const ir::Tensor* gidx = nullptr;  // may be null
};

bool dims_are(const ir::Tensor& t, std::initializer_list<std::vector<int64_t>> options) {
  for (const auto& o : options)
    if (t.dims() == o) return true;
  return false;
}

void check_weights(const ir::Node& n, const NBitsAttrs& at, const WeightInputs& w, DType a_dt) {
  const std::string me = n.describe() + ": MatMulNBits ";
  if (w.b->dtype() != DType::U8)
    throw ModelError(me + "B must be uint8, got " + ir::dtype_name(w.b->dtype()));
  if (w.b->dims() != std::vector<int64_t>{at.N, at.k_blocks, at.blob_size})
    throw ModelError(
        me + "B must be [N, k_blocks, blob_size] = " + dims_str({at.N, at.k_blocks, at.blob_size}) +
        " for K=" + std::to_string(at.K) + " N=" + std::to_string(at.N) +
        " bits=" + std::to_string(at.bits) + " block_size=" + std::to_string(at.block_size) +
        ", got " + dims_str(w.b->dims()));
  if (w.scales->dtype() != a_dt)
    throw ModelError(me + "scales must have A's dtype " + ir::dtype_name(a_dt) + ", got " +
                     ir::dtype_name(w.scales->dtype()));
  if (!dims_are(*w.scales, {{at.N * at.k_blocks}, {at.N, at.k_blocks}}))
    throw ModelError(me + "scales must be [" + std::to_string(at.N * at.k_blocks) + "] or " +
                     dims_str({at.N, at.k_blocks}) + ", got " + dims_str(w.scales->dims()));
  if (w.zp) {
    if (w.zp->dtype() == DType::U8) {
      if (!dims_are(*w.zp, {{at.N * at.zp_blob}, {at.N, at.zp_blob}}))
        throw ModelError(me + "packed uint8 zero_points must be [" +
                         std::to_string(at.N * at.zp_blob) + "] or " +
                         dims_str({at.N, at.zp_blob}) + ", got " + dims_str(w.zp->dims()));
    } else if (w.zp->dtype() == a_dt) {
      if (!dims_are(*w.zp, {{at.N * at.k_blocks}, {at.N, at.k_blocks}}))
        throw ModelError(me + "zero_points of dtype " + ir::dtype_name(a_dt) + " must be [" +
                         std::to_string(at.N * at.k_blocks) + "] or " +
                         dims_str({at.N, at.k_blocks}) + ", got " + dims_str(w.zp->dims()));
    } else {
      throw ModelError(me + "zero_points must be uint8 or A's dtype " + ir::dtype_name(a_dt) +
                       ", got " + ir::dtype_name(w.zp->dtype()));
    }
  }
  if (w.gidx) {
    if (w.gidx->dtype() != DType::I32)
      throw ModelError(me + "g_idx must be int32, got " + ir::dtype_name(w.gidx->dtype()));
    if (!dims_are(*w.gidx, {{at.K}, {at.k_blocks * at.block_size}}))
      throw ModelError(me + "g_idx must be [" + std::to_string(at.K) + "] or [" +
                       std::to_string(at.k_blocks * at.block_size) + "], got " +
                       dims_str(w.gidx->dims()));
    const auto g = w.gidx->data<int32_t>();
    for (int64_t k = 0; k < at.K; ++k)
      if (g[static_cast<size_t>(k)] != k / at.block_size)
        throw ModelError(me +
                         "g_idx other than k / block_size (act-order) is not supported: g_idx[" +
                         std::to_string(k) + "] = " + std::to_string(g[static_cast<size_t>(k)]) +
                         ", expected " + std::to_string(k / at.block_size));
  }
}

/// Values of a float tensor (f32 or f16) as float.
std::vector<float> as_float(const ir::Tensor& t) {
  if (t.dtype() == DType::F16) return values_as<float, mcc::f16>(t);
  auto d = t.data<float>();
  return {d.begin(), d.end()};
}

/// Rows [n0, n1) of W as a float [n1 - n0, K] matrix (row n holds the K weights of output n).
std::vector<float> dequantize(const KernelContext& ctx, const NBitsAttrs& at, const WeightInputs& w, int64_t n0,
                              int64_t n1) {
  const std::vector<float> scales = as_float(*w.scales);
  std::vector<float> zpf;
  const uint8_t* zpq = nullptr;
  if (w.zp && w.zp->dtype() == DType::U8)
    zpq = w.zp->data<uint8_t>().data();
  else if (w.zp)
    zpf = as_float(*w.zp);
  const uint8_t* q = w.b->data<uint8_t>().data();
  const int64_t K = at.K, bits = at.bits, bs = at.block_size, nb = at.k_blocks;
  const unsigned mask = (1u << bits) - 1u;
  const float zp_default = static_cast<float>(1 << (bits - 1));
  std::vector<float> out(static_cast<size_t>((n1 - n0) * K));
  ctx.parallel_for(n1 - n0, K * 4, [&](int64_t lo, int64_t hi) {
    for (int64_t n = n0 + lo; n < n0 + hi; ++n) {
      const uint8_t* row = q + n * nb * at.blob_size;
      float* o = out.data() + (n - n0) * K;
      for (int64_t j = 0; j < nb; ++j) {
        const float s = scales[static_cast<size_t>(n * nb + j)];
        float z = zp_default;
        if (zpq) {
          const int64_t bit = j * bits;
          z = static_cast<float>((zpq[n * at.zp_blob + bit / 8] >> (bit % 8)) & mask);
        } else if (!zpf.empty()) {
          z = zpf[static_cast<size_t>(n * nb + j)];
        }
        const uint8_t* blob = row + j * at.blob_size;
        const int64_t k0 = j * bs, k1 = std::min(K, k0 + bs);
        for (int64_t k = k0; k < k1; ++k) {
          const int64_t bit = (k - k0) * bits;
          const unsigned code = (blob[bit / 8] >> (bit % 8)) & mask;
          o[k] = (static_cast<float>(code) - z) * s;
        }
      }
    }
  });
  return out;
}

/// Outputs (rows of W) dequantized at a time when the dequantized W is not kept
/// (ExecOptions::keep_weight_copies off).
constexpr int64_t kTransientRows = 4096;

/// Dequantized weights shared by every run of one kernel when they come from initializers.
struct ConstWeights {
  std::mutex mu;
  bool ready = false;
  std::vector<float> w;
};

bool is_const(const ir::Value* v) { return !v || (v->initializer && !v->is_graph_input); }

Kernel make_matmul_nbits(const ir::Node& node) {
  const NBitsAttrs at(node);
  if (node.inputs.size() > 6)
    throw ModelError(node.describe() + ": MatMulNBits takes at most 6 inputs, got " +
                     std::to_string(node.inputs.size()));
  const bool constant = is_const(node.input(1)) && is_const(node.input(2)) &&
                        is_const(node.input(3)) && is_const(node.input(4));
  auto cache = constant ? std::make_shared<ConstWeights>() : nullptr;
  return [at, cache](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& a = ctx.in(0);
    if (a.dtype() != DType::F32 && a.dtype() != DType::F16)
      throw UnsupportedError(n.describe() + ": MatMulNBits A must be float32 or float16, got " +
                             ir::dtype_name(a.dtype()));
    if (a.rank() < 1 || a.dims().back() != at.K)
      throw ModelError(n.describe() + ": MatMulNBits A must end in K=" + std::to_string(at.K) +
                       ", got " + dims_str(a.dims()));
    WeightInputs wi{&ctx.in(1), &ctx.in(2), ctx.has_input(3) ? &ctx.in(3) : nullptr,
                    ctx.has_input(4) ? &ctx.in(4) : nullptr};
    const ir::Tensor* bias = ctx.has_input(5) ? &ctx.in(5) : nullptr;
    if (bias && (bias->dtype() != a.dtype() || bias->dims() != std::vector<int64_t>{at.N}))
      throw ModelError(n.describe() + ": MatMulNBits bias must be " + ir::dtype_name(a.dtype()) +
                       " [" + std::to_string(at.N) + "], got " + ir::dtype_name(bias->dtype()) +
                       " " + dims_str(bias->dims()));

    check_weights(n, at, wi, a.dtype());
    const std::vector<float>* w = nullptr;  // all of W, when kept; otherwise bands of rows per run
    if (cache && ctx.keeps_weight_copies()) {
      std::lock_guard<std::mutex> lock(cache->mu);
      if (!cache->ready) {
        cache->w = dequantize(ctx, at, wi, 0, at.N);
        cache->ready = true;
      }
      w = &cache->w;
    }

    std::vector<int64_t> out_dims = a.dims();
    out_dims.back() = at.N;
    const int64_t M = a.numel() / at.K, N = at.N, K = at.K;
    ir::Tensor& y = ctx.alloc_output(0, a.dtype(), out_dims);
    std::vector<float> av, yv;
    const float* ap;
    float* yp;
    if (a.dtype() == DType::F32) {
      ap = a.data<float>().data();
      yp = y.mutable_data<float>().data();
    } else {
      av = values_as<float, mcc::f16>(a);
      yv.resize(static_cast<size_t>(M * N));
      ap = av.data();
      yp = yv.data();
    }
    if (M > 0) {
      if (w) {
        gemm_parallel<float>(ctx, M, N, K, ap, K, false, w->data(), K, true, yp, N, false);
      } else {  // not kept: dequantized a band of outputs at a time, never all of W at once
        for (int64_t n0 = 0; n0 < N; n0 += kTransientRows) {
          const int64_t rows = std::min(kTransientRows, N - n0);
          const std::vector<float> band = dequantize(ctx, at, wi, n0, n0 + rows);
          gemm_parallel<float>(ctx, M, rows, K, ap, K, false, band.data(), K, true, yp + n0, N, false);
        }
      }
      if (bias) {
        const std::vector<float> bv = as_float(*bias);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) yp[i * N + j] += bv[static_cast<size_t>(j)];
      }
    }
    if (a.dtype() == DType::F16) {
      auto o = y.mutable_data<mcc::f16>();
      for (size_t i = 0; i < yv.size(); ++i) o[i] = static_cast<mcc::f16>(yv[i]);
    }
  };
}

}  // namespace

void register_matmul_nbits(KernelRegistry& r) {
  r.add("MatMulNBits", 1, 0, make_matmul_nbits, kMsDomain);
}

}  // namespace mcc::backends::cpu
