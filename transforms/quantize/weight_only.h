// Weight-only quantization (quantize{mode=weight_only}): the weights of MatMul layers (B a
// float32 constant [K, N], A a float32 activation) become 4- or 8-bit codes in blocks of
// `block_size` rows along K with one scale (and zero point when weight_zero_point=true) per
// block and column (quantize/block_quant.h); activations stay float. The model then holds
// DequantizeLinear(block_size) -> MatMul (opset 21, IR 10) or com.microsoft.MatMulNBits nodes
// (quantize/apply_blocked.h): weights take an eighth (4-bit) or a quarter (8-bit) of their fp32 bytes.
//   algorithm=rtn   each block rounded to nearest from its own range; needs no data.
//   algorithm=gptq  (quantize/gptq.h) the calibration samples run through the float model; the
//                   Hessian X^T X of every quantized layer's input is accumulated (one per input
//                   tensor, shared by the layers reading it; a weight read by several layers sums
//                   theirs) and GPTQ chooses codes that compensate rounding error. Hessians of
//                   more than hessian_budget bytes are collected in several passes, each ending
//                   at its last layer and quantizing its layers before the next (gptq_groups). The codes are
//                   recorded (base64, in the point), so --state replays without data.
// ratio=R < 1 with bits=4 (quantize/mixed_bits.h): the weights whose 4-bit rounding costs most
// (weighted by the calibration inputs' mean squares under gptq) become 8-bit blocks until at
// most 1 - R of the elements are 8-bit; record.mixed_bits lists every weight's cost and bits.
// lm_head_block_size=32 (default) with bits=4 and a larger block_size: a layer writing a graph
// output named like causal-LM logits (the name holds "logits", as the judge finds them) takes
// 4-bit blocks of 32: the LM head's rounding at block 128 costs SmolLM2-135M more perplexity than
// all 210 other layers together, and 4-bit blocks keep ONNX Runtime's fast MatMulNBits kernel
// (its 8-bit one runs a single token 5x slower).
// The record adds, per weight, the proxy loss tr((W-Q)^T H (W-Q)) of GPTQ and of RTN on the same
// calibration inputs (GPTQ only), and the stats count layers, weights and bytes.
// Does not apply to: Gemm, Conv and other op types (listed as skipped), MatMul whose B is not a
// float32 constant matrix or whose A is not float32, weights shared with a node left float, graph
// inputs or outputs. opset < 21 that cannot be raised (QDQ form) is an UnsupportedError naming the
// op; weight_format=matmul_nbits needs no opset change.
#pragma once
#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/pipeline/pass.h"
#include "transforms/quantize/block_quant.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/points.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

struct WeightOnlyResult {
  Points points;
  nlohmann::ordered_json gptq = nlohmann::ordered_json::object();  // calibration and per-weight losses (GPTQ)
  int64_t samples = 0;
  nlohmann::ordered_json mixed_bits;  // ratio < 1: the 8-bit choice and every weight's cost (mixed_bits.h)
  std::vector<std::string> lm_heads_fine;  // bits=4: LM head weights in blocks of lm_head_block_size
};

/// The block format the options ask for (bits, block_size, zero points, scale_search).
BlockFormat block_format(const WeightOnlyConfig& w);

/// Why candidate c has no weight-only form ("" when it has one).
std::string weight_only_refusal(const Candidate& c);

/// The block-wise weight points of the selection (refused nodes move to sel.skipped), their
/// codes computed by RTN or GPTQ (which runs calibration: UsageError without calib=DIR).
WeightOnlyResult weight_only_points(const ir::Model& model, Selection& sel, const Config& cfg, const PassContext& ctx);

/// Bytes the layer-input Hessians of one GPTQ calibration pass may hold: an eighth of the model's
/// initializers, at least 64 MiB. Layers whose Hessians together exceed it are collected in
/// several passes (gptq_groups), so GPTQ's memory is bounded by the model, not by its depth.
int64_t hessian_budget(const ir::Model& model);

/// The layers `kept` split into groups for GPTQ calibration passes, in graph order of their inputs.
/// Layers sharing a weight or an input stay in one group (a weight's Hessian sums those of all its
/// inputs); a group closes when the next cluster's Hessians (4 K^2 bytes per distinct input)
/// would take it past `budget` (a cluster larger than the budget is a group of its own). Each
/// pass ends at the last of its group's inputs, so the passes together cost about half a full
/// pass per group. The codes do not depend on the grouping.
std::vector<std::vector<Candidate>> gptq_groups(const ir::Model& model, const std::vector<Candidate>& kept, int64_t budget);

/// Raises plan's opset to 21 and IR version to 10 for the QDQ form (UnsupportedError when an op
/// blocks it); the MatMulNBits form keeps them.
void require_weight_only_opset(const ir::Model& model, const Config& cfg, Plan& plan);

}  // namespace mcc::transforms::quantize
