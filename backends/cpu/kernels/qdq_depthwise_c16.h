// Channels-in-lanes kernel for the depthwise convs of the QDQ conv fusion (qdq_conv_fusion.h):
// u8 x, exact-integer f32 weights, the f32 epilogue and the output quantization.
#pragma once
#include <vector>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels/conv_fusion.h"
#include "backends/cpu/kernels/conv_util.h"

namespace mcc::backends::cpu {

/// Per-channel parameters of one quantized depthwise conv (every array has one entry per channel).
struct QdqDepthwise {
  const float* w = nullptr;      // [C][kh * kw], s8 weights as exact f32 integers
  const float* x_zero = nullptr;  // x zero point
  const float* scale = nullptr;   // x_scale * w_scale
  const float* bias = nullptr;    // f32 bias, or null
  Epilogue ep;
  bool quant_out = false;          // y quantized (else f32)
  bool out_u8 = true;              // u8 (else s8) when quantized
  const float* y_scale = nullptr;  // when quantized
  const float* y_zero = nullptr;
  bool quant_clamp = true;         // false: |activated value / y_scale| stays below 1e8
  bool silu_in_range = false;      // SiLU inputs provably within its exp clamp (silu_ps_n)
  const float* y_inv = nullptr;    // 1 / y_scale, when quantized
  const int8_t* taps = nullptr;    // qdq_depthwise_c16_taps of w (null: the kernel does not run)
  int taps_k = 0;                  // the kernel size the taps were packed for
  const int32_t* neg_corr = nullptr;  // qdq_depthwise_c16_taps' -x_zero * sum(w) per channel
};

/// The weights of a k x k depthwise conv (w: [C][k * k] exact integers in f32) in the order the
/// kernel's vpdpbusd reads them, per group of 16 channels: [k][(k + 3) / 4][16][4] s8 (taps past
/// a kernel row and channels past C are 0); and -x_zero[c] * sum(w[c]) per channel, padded to a
/// multiple of 16. Built once at plan time.
std::vector<int8_t> qdq_depthwise_c16_taps(const float* w, int64_t C, int k);
std::vector<int32_t> qdq_depthwise_c16_neg_corr(const float* w, const float* x_zero, int64_t C, int k);

/// y = quantize(act((sum over taps of w * (x - x_zero)) * scale + bias)) for a 2-D depthwise conv
/// (channel multiplier 1) with a 3x3 or 5x5 kernel, stride 1 or 2 and no dilation, 16 channels at
/// a time (qdq_depthwise_c16.cpp). The tap sums are exact integers, so the values equal the
/// per-channel kernel's. False (nothing written) for another geometry, without AVX-512, or when
/// the int8 SIMD kernels are switched off.
bool qdq_depthwise_c16(const KernelContext& ctx, const ConvProblem& p, const QdqDepthwise& q,
                       const uint8_t* x, std::byte* y);

}  // namespace mcc::backends::cpu
