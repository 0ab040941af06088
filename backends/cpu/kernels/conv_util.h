// Shared by the convolution and pooling kernels: window geometry (kernel, strides, dilations,
// pads, auto_pad, ceil_mode) normalised to 3 spatial dims, the conv engine (direct 1x1,
// depthwise, im2col + Eigen GEMM) and a blocked, parallel row-major GEMM.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/kernels/conv_fusion.h"

namespace mcc::backends::cpu {

/// Window attributes of a Conv/ConvTranspose/pool node as written in the model (parsed once).
struct WindowAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  bool ceil_mode = false;
  static WindowAttrs parse(const ir::Node& n);
};

/// Geometry of one windowed op, 1-3 spatial dims padded to 3 (leading dims of size 1).
struct WindowGeom {
  int nd = 0;  // spatial dims of the model tensor
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, dil{1, 1, 1}, pad_b{0, 0, 0}, pad_e{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
  /// Output dims of the model tensor for (N, C).
  std::vector<int64_t> out_dims(int64_t n, int64_t c) const;
};

/// Computes the geometry of Conv / pooling: output size from pads or auto_pad (SAME_UPPER,
/// SAME_LOWER, VALID), ceil_mode for pools. `kernel` is the spatial kernel shape.
WindowGeom conv_geometry(const ir::Node& n, const WindowAttrs& a,
                         const std::vector<int64_t>& x_dims, const std::vector<int64_t>& kernel,
                         bool is_pool);

/// The im2col of one image and group the conv engine runs on: col[(ci, kd, kh, kw), j] for output
/// positions [p0, p0 + nb), padded taps 0; x holds the group's cg input planes. Also read by the
/// quantize stage's GPTQ for a conv's input patches (transforms/quantize/static_gptq.h).
void im2col_f32(const WindowGeom& g, int64_t cg, const float* x, int64_t p0, int64_t nb, float* col);

/// Conv problem: X (N, C, in...), W (M, C/G, k...), optional bias (M), Y (N, M, out...).
struct ConvProblem {
  WindowGeom g;
  int64_t n = 1, c = 1, m = 1, group = 1;
};

/// Validates X/W dims against group and kernel_shape and computes the geometry (ModelError
/// naming the node on mismatch).
ConvProblem conv_problem(const ir::Node& n, const WindowAttrs& a, int64_t group,
                         const std::vector<int64_t>& x_dims, const std::vector<int64_t>& w_dims);

/// Runs the conv with T in {float, double, int32_t}; x/w/y are contiguous NC(DHW), bias may be
/// null. Padded taps read 0 (integer convs subtract zero points first, so 0 is right there too).
/// `ep` (may be null) is applied to each output block right after it is computed. `w_t` (may be
/// null; f32 only) is the W^T packing of a one-group conv (channel_lanes_weights): such convs on
/// small output maps then run conv_gemm_f32_cl (on an im2col of the input unless pointwise).
template <class T>
void conv_run(const KernelContext& ctx, const ConvProblem& p, const T* x, const T* w, const T* bias,
              T* y, const Epilogue* ep = nullptr, const float* w_t = nullptr);

/// Whether a one-group conv over P output positions with K = C * k... runs conv_gemm_f32_cl: the
/// positions fill under 90 % of conv_gemm_f32's 32-position tiles (7x7, 13x13, 14x14). Any K:
/// that kernel walks K in blocks whose weights stay in L1.
inline bool channel_lanes_pay(int64_t P, int64_t K) { return K > 0 && P * 10 < (P + 31) / 32 * 32 * 9; }

/// Weights of a conv whose output shape is unknown are packed for conv_gemm_f32_cl only up to this
/// many values when the kernel is wider than 1x1 (pointwise weights always): the packed copy is
/// extra memory, spent only where a small map is likely.
constexpr int64_t kUnknownShapeWeights = int64_t{1} << 18;

/// W^T of a one-group conv (w: [M, C, k...] f32, K = C * k...) in chunks of 32 output channels,
/// each [K][32] (the last [K][16] when at most 16 channels are left; channels past M zero), the
/// packing conv_gemm_f32_cl reads; empty for grouped convs, when `y_dims` (the output's static
/// dims, empty when unknown) says channel_lanes_pay is false, and for an unknown output shape
/// when the kernel is wider than 1x1 and the weights hold more than kUnknownShapeWeights values.
std::vector<float> channel_lanes_weights(const float* w, const std::vector<int64_t>& wdims,
                                         int64_t group, const std::vector<int64_t>& y_dims);

/// Y[M, N] = W[M, K] * X[K, N] + bias, then the activation of `ep`, with the output channels in
/// the vector lanes, from the W^T chunks of pointwise_weights_t (conv_gemm_cl.cpp); the same values as conv_gemm_f32. False
/// (nothing written) when the build has no AVX-512.
bool conv_gemm_f32_cl(const KernelContext& ctx, int64_t M, int64_t N, int64_t K, const float* Wt,
                      const float* X, float* Y, const float* bias, const Epilogue* ep);

/// Y[M, N] = W[M, K] * X[K, N], row-major with row strides ldw/ldx/ldy, on AVX-512 register tiles
/// (conv_gemm.cpp); false (nothing written) when the build has no AVX-512. Each output then gets
/// + bias[row] (bias may be null) and the activation of `ep` (may be null) before it is stored.
bool conv_gemm_f32(int64_t M, int64_t N, int64_t K, const float* W, int64_t ldw, const float* X,
                   int64_t ldx, float* Y, int64_t ldy, const float* bias = nullptr,
                   const Epilogue* ep = nullptr);

/// Output positions [p0, p0 + cnt) of one image and group of a 1-D/2-D conv with horizontal
/// stride 1, computed straight from xg (the group's cg input channels) without im2col
/// (conv_direct.cpp): Y[m, j] (row stride ldy, Y at position p0) for the M output channels
/// whose weight rows (cg*KH*KW values) start at W with stride ldw, + bias[m] (may be null), then
/// the activation of `ep` (may be null). Values equal im2col + conv_gemm_f32. False (nothing
/// written) without AVX-512 or for another geometry.
bool conv_direct_f32(const WindowGeom& g, int64_t cg, const float* xg, int64_t p0, int64_t cnt,
                     int64_t M, const float* W, int64_t ldw, float* Y, int64_t ldy,
                     const float* bias, const Epilogue* ep);

/// Depthwise 2-D conv with a 3x3 or 5x5 kernel, stride 1 or 2 and no dilation, T in {float,
/// double} (conv_depthwise.cpp); false (nothing written) for any other shape.
template <class T>
bool depthwise_fast(const KernelContext& ctx, const ConvProblem& p, const T* x, const T* w,
                    const T* bias, T* y, const Epilogue* ep);

/// Depthwise 2-D f32 conv, channel multiplier 1, 3x3 or 5x5, stride 1 or 2, no dilation, with
/// 16 channels in the vector lanes (conv_depthwise_c16.cpp); the same values as depthwise_fast's
/// per-plane kernel. False (nothing written) for another shape or without AVX-512.
bool depthwise_c16_f32(const KernelContext& ctx, const ConvProblem& p, const float* x,
                       const float* w, const float* bias, float* y, const Epilogue* ep);

/// Row-major C[M,N] = A[M,K] * B[K,N] (+ C when accumulate), split over blocks of the larger
/// output dim across the pool. lda/ldb/ldc are row strides; trans flags read A/B transposed
/// (A stored [K,M] / B stored [N,K]).
template <class T>
void gemm_parallel(const KernelContext& ctx, int64_t M, int64_t N, int64_t K, const T* A,
                   int64_t lda, bool trans_a, const T* B, int64_t ldb, bool trans_b, T* C,
                   int64_t ldc, bool accumulate);

}  // namespace mcc::backends::cpu
