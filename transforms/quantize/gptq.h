// GPTQ (Frantar et al., 2022) for quantize{mode=weight_only algorithm=gptq}: quantizes a MatMul
// weight W [K, N] row by row (a row = one input feature k) and, after each row, moves its
// rounding error onto the rows not yet quantized in the way that least increases the layer's
// output error E||X W - X Q||^2, using the Hessian H = X^T X of the layer inputs X [tokens, K]
// seen on calibration data (no gradients). With U the upper Cholesky factor of H^-1:
//   err = (W[k] - Q[k]) / U[k, k];  W[j] -= U[k, j] * err  for every later row j
// applied lazily: within a batch of `lazy_block` rows immediately, to the rows after it once
// per batch (one matrix product). Damping adds damp * mean(diag H) to the diagonal; an input
// that is always 0 (H[k, k] = 0) gets H[k, k] = 1 and its row quantized to zero.
// Block scales (quantize/block_quant.h): each block's scale and zero point are chosen when its
// first row is reached, from the rows as updated so far (the original method's grouping). With
// act_order, rows go in order of decreasing H[k, k] and the block scales come from the float
// weights up front, so every block keeps rows contiguous in K (what DequantizeLinear's block_size
// form needs). Double precision throughout; the result depends only on W, H and the options.
// Fixed column scales (GptqOptions::column_scales; the static int8 weights of quantize/static_gptq.h):
// one block per column with the given scale, no parameters chosen; only the codes are GPTQ's.
// Does not apply to weights that are not 2-D [K, N] float32, or without calibration data.
#pragma once
#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "transforms/quantize/block_quant.h"

namespace mcc::transforms::quantize {

struct GptqOptions {
  double damp = 0.01;
  bool act_order = false;
  int64_t lazy_block = 128;
  /// One scale per column, used as it is (the block format's block_size must cover K): the codes
  /// are chosen for scales fixed beforehand. nullptr: block parameters chosen as described above.
  const std::vector<float>* column_scales = nullptr;
  /// Rows whose input is always 0 on the calibration data (H[k, k] = 0): quantized to zero (true,
  /// GPTQ's rule), or rounded to nearest like any other row (false: a conv channel that calibration
  /// never saw active may be active on other inputs).
  bool zero_unseen_rows = true;
};

/// Running H = sum over tokens of x x^T for one layer input of width K (x: rows of length K).
/// Held in float32 (4 K^2 bytes: what bounds how many layers one calibration pass collects); each
/// added chunk's product is a float GEMM, so double storage would only round the sum of a few
/// hundred partial sums more finely, far below GPTQ's damping.
struct HessianAccumulator {
  explicit HessianAccumulator(int64_t k) : H(Eigen::MatrixXf::Zero(k, k)), sum(Eigen::VectorXd::Zero(k)) {}
  /// Adds `rows` rows of K floats (row-major); throws ModelError when the width is not K.
  void add(const float* x, int64_t rows, int64_t width);
  /// Same for the transposed layout: `a` holds K rows (one per input feature) of `cols` values
  /// each, one column per token (a conv's patches, quantize/static_gptq.h).
  void add_columns(const float* a, int64_t k, int64_t cols);
  /// H in double, as gptq_quantize takes it.
  Eigen::MatrixXd hessian() const { return H.cast<double>(); }
  /// The centered H - s s^T / tokens (s: the sum of the rows), for a layer whose bias correction
  /// removes the mean part of its output error (quantize/static_gptq.h).
  Eigen::MatrixXd centered_hessian() const;
  Eigen::MatrixXf H;
  Eigen::VectorXd sum;  // per input feature, over every token added
  int64_t tokens = 0;
};

/// GPTQ-quantized weight and the proxy losses tr((W - Q)^T H (W - Q)) of GPTQ and of round to
/// nearest on the same H (for the record: what GPTQ gained on this layer's calibration inputs).
struct GptqResult {
  BlockQuantized q;
  double loss = 0, rtn_loss = 0;
};

GptqResult gptq_quantize(const float* w, int64_t K, int64_t N, const Eigen::MatrixXd& H, const BlockFormat& f,
                         const GptqOptions& o);

/// tr((W - Q)^T H (W - Q)) of a quantized weight against the float one.
double proxy_loss(const float* w, const BlockQuantized& q, int64_t block_size, const Eigen::MatrixXd& H);

}  // namespace mcc::transforms::quantize
