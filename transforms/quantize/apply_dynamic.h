// Writing dynamic activation points (quantize{mode=dynamic}), in the form ONNX Runtime's
// quantize_dynamic writes for MatMul:
//
// Before:  Y = MatMul(A, W)                 W a float32 constant [K, N]
//          Y = Gemm(A, W, C)                transB=1: W is [N, K]; alpha = 1, transA = 0
// After:   A_quantized, A_scale, A_zero_point = DynamicQuantizeLinear(A)      (uint8, at run time)
//          Y_int32 = MatMulInteger(A_quantized, W_quantized, A_zero_point, W_zero_point)
//          Y_int32_float = Cast(Y_int32, to=float)
//          Y_scale = Mul(A_scale, W_scale)                  scalar x [N] (or scalar per tensor)
//          Y = Mul(Y_int32_float, Y_scale)                  (Gemm with C: Y_unbiased, then
//          Y = Add(Y_unbiased, C))
// W_quantized is the int8 weight [K, N] (a Gemm's transB=1 weight is stored transposed), W_scale
// its float32 scales and W_zero_point its int8 zeros; the float W is removed once nothing reads
// it. One DynamicQuantizeLinear serves every node that reads A. Y keeps its name, so downstream
// nodes, graph outputs and per-layer comparison by name are untouched.
//
// per_token points (one range per row of A, i.e. per token of a transformer's [B, S, K]):
//          hi, lo = ReduceMax(A), ReduceMin(A)  over the last axis, keepdims
//          s = max((hi - lo) * 128 / 255, 1e-30);  c = lo + s              [.., 1] per row
//          A_normalised = (A - c) / s                         every row in [-1, 127/128]
//          ... DynamicQuantizeLinear(A_normalised) -> MatMulInteger -> Cast -> Mul as above
//          Y = Y_normalised * s + c * W_column_sums   (W_column_sums[n] = sum_k W_dequantized[k, n])
// The ends -1 and 127/128 give DynamicQuantizeLinear the scale 1/128 and the zero point 128
// exactly, and each row's min and max the codes 0 and 255 (row_ends_on_codes in the record).
// Points recorded before it replay the earlier form, c = (hi + lo) / 2, s = (hi - lo) / 2, rows in
// [-1, 1]: its zero point round(127.5) and every row's ends sit halfway between two codes, where
// runtimes round apart.
// so each row is quantized over its own range (asymmetric) while the integer product stays the
// one ONNX Runtime fuses (DynamicQuantizeMatMul). The run-time scale is not handed to
// MatMulInteger's consumers as a per-row tensor: ONNX Runtime 1.32 fuses MatMulInteger -> Cast ->
// Mul(Mul(a_scale, b_scale)) into MatMulIntegerToFloat whatever a_scale's shape and then reads
// one value of it, which gave wrong outputs at ORT_ENABLE_ALL.
// Does not apply to static points (quantize/apply.cpp); a dynamic point that is not uint8 per
// tensor, or whose consumers are not MatMul/Gemm nodes reading it with a weight point, is a
// ModelError.
#pragma once
#include <set>
#include <string>

#include "ir/graph.h"
#include "transforms/quantize/plan.h"

namespace mcc::transforms::quantize {

/// Writes every dynamic activation point of `plan` and the weight points its consumers read.
/// Returns the names of those weight points (apply_plan writes the others as QDQ).
std::set<std::string> write_dynamic_points(ir::Graph& g, const Plan& plan, std::set<std::string>& node_names);

}  // namespace mcc::transforms::quantize
