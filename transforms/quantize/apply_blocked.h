// Writing the block-wise weight points of quantize{mode=weight_only} (quantize/block_quant.h).
//
// QDQ form (Plan::matmul_nbits false; ai.onnx opset >= 21, IR >= 10):
//   W [K, N] float32  ->  W_quantized (int4/uint4/int8/uint8 [K, N])
//                         -> DequantizeLinear(W_quantized, W_scale [K/bs, N], W_zero_point, axis=0,
//                            block_size=bs) -> W -> MatMul          (zero point omitted when symmetric)
// MatMulNBits form (Plan::matmul_nbits; ONNX Runtime's com.microsoft domain, version 1):
//   Y = MatMul(A, W)  ->  Y = com.microsoft.MatMulNBits(A, W_quantized uint8 [N, K/bs, bs*bits/8],
//                            W_scales [N * K/bs], W_zero_points)   attributes K, N, bits, block_size
//   codes stored unsigned (signed codes + 2^(bits-1), the op's zero point when none is given);
//   zero points (asymmetric only) packed per column, 4-bit two per byte, low nibble first. The node
//   keeps the MatMul's name and output, so names match for per-layer comparison.
// Codes: the point's recorded codes (GPTQ) when present, else round(W / scale) + zero point.
// Does not apply to points that are not block-wise weights of rank-2 float32 constants along axis
// 0; MatMulNBits also needs every reader of the weight to be a MatMul reading it as input B.
#pragma once
#include <set>
#include <string>

#include "ir/graph.h"
#include "transforms/quantize/plan.h"

namespace mcc::transforms::quantize {

/// Writes every block-wise weight point of the plan in the plan's form; returns their names.
std::set<std::string> write_blocked_points(ir::Model& model, const Plan& plan, std::set<std::string>& node_names);

}  // namespace mcc::transforms::quantize
