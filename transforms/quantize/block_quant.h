// Block-wise weight quantization for quantize{mode=weight_only}: a MatMul weight W [K, N] is cut
// into blocks of `block_size` consecutive rows (along K, the axis the MatMul sums over) of one
// column; each block has its own scale (and zero point when asymmetric).
//   symmetric  (int4/int8):   s = max|w| / qmax (7 or 127), z = 0, q = clamp(round(w / s), qmin, qmax)
//   asymmetric (uint4/uint8): lo = min(0, min w), hi = max(0, max w), s = (hi - lo) / (2^bits - 1),
//                             z = clamp(round(-lo / s)), q = clamp(round(w / s) + z, 0, 2^bits - 1)
// round = half to even. A block of zeros gets s = 1.
// Range search (search=true, weight_only's scale_search): the range above shrunk by factors 1, 0.98,
// ..., 0.6 (kSearchSteps + 1 of them) and, symmetric, also s = max|w| / (qmax + 1) (the largest
// magnitude on the extra negative code, -8 of int4, the form ONNX Runtime's MLAS quantizer uses,
// clamped to qmax on the positive side); the candidate with the least sum of squared dequantization
// errors over the block wins (the full range on ties). The last block of a K that is not a multiple
// of block_size is shorter. Scales and zero points are laid out [ceil(K / block_size), N]
// row-major, the shape DequantizeLinear's block_size form takes (opset 21). Codes are stored as
// DequantizeLinear reads them: the weight's shape, 4-bit codes packed two per byte, low nibble
// first. Does not apply to other layouts (Conv weights, blocks along N): the writers refuse them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/tensor.h"

namespace mcc::transforms::quantize {

inline constexpr int kSearchSteps = 20;

struct BlockFormat {
  int bits = 4;             // 4 or 8
  int64_t block_size = 32;
  bool zero_point = false;  // asymmetric (unsigned codes with zero points)
  bool search = false;      // search each block's range for the least squared rounding error
  bool narrow = false;      // symmetric codes in [-qmax, qmax] (static int8 weights: -127..127)
  ir::DType dtype() const;  // i4, u4, i8 or u8
  int64_t qmin() const;
  int64_t qmax() const;
};

/// Scale and zero point of one block of values.
struct BlockParams {
  float scale = 1;
  int32_t zero_point = 0;
};

/// The parameters of the block holding values x[0..n) (strided by `stride`).
BlockParams block_params(const float* x, int64_t n, int64_t stride, const BlockFormat& f);

/// The code of w in a block with parameters p.
int32_t block_code(float w, const BlockParams& p, const BlockFormat& f);

/// A quantized [K, N] weight: one code per element (row-major), scales and zero points per block.
struct BlockQuantized {
  int64_t K = 0, N = 0;
  std::vector<int32_t> codes;
  std::vector<float> scale;        // [ceil(K / block_size), N]
  std::vector<int32_t> zero_point; // same shape
};

/// Round to nearest: every block's parameters from its values, then each value's code.
BlockQuantized rtn_quantize(const float* w, int64_t K, int64_t N, const BlockFormat& f);

/// The dequantized value of element (k, n).
inline float dequantized(const BlockQuantized& q, int64_t k, int64_t n, int64_t block_size) {
  const size_t b = static_cast<size_t>((k / block_size) * q.N + n);
  return (static_cast<float>(q.codes[static_cast<size_t>(k * q.N + n)] - q.zero_point[b])) * q.scale[b];
}

/// Codes as the bytes of a tensor of dtype f.dtype() and shape [K, N] (4-bit packed).
std::string pack_codes(const std::vector<int32_t>& codes, ir::DType dt);
/// Inverse of pack_codes for `count` codes; ModelError when `bytes` has the wrong length.
std::vector<int32_t> unpack_codes(const std::string& bytes, ir::DType dt, int64_t count);
/// Throws the ModelError of unpack_codes when `bytes` cannot hold `count` codes of dt.
void check_packed_codes(const std::string& bytes, ir::DType dt, int64_t count);
/// Code i of packed `bytes` (pack_codes' layout), without unpacking the others.
int32_t packed_code_at(const std::string& bytes, ir::DType dt, size_t i);

}  // namespace mcc::transforms::quantize
