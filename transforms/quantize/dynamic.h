// Dynamic INT8 quantization (quantize{mode=dynamic}): the choice of points. MatMul layers (B a
// float32 constant [K, N]) and Gemm layers (transA = 0, alpha = 1, beta = 1 when C is given) get
// int8 symmetric weights computed offline (per output column, or per tensor with
// per_channel=false: s[n] = max|W[:, n]| / 127) and a uint8 activation quantized at run time by
// DynamicQuantizeLinear (no calibration, no recorded scale): one range per row
// (dynamic_activations=per_token: one row's range no longer sets every other row's step, and a
// row skewed by a few outlier channels keeps its codes; MiniLM held-out sentence cosine 0.9987
// against 0.9937 per tensor), one per tensor (per_tensor, ONNX Runtime quantize_dynamic's
// form), or, by default (auto), per row on every activation of a causal LM (a graph output
// named like logits, rank 3: a decoder's residual stream carries a few huge tokens) and
// elsewhere on the activations of feed-forward blocks only: a GELU
// output and the input of a layer whose output reaches a GELU (Erf/Tanh within five
// Add/Mul/Div/Sub/Pow steps, or a Gelu node). Those two carry most of what per-row ranges win,
// and the row statistics and rescaling cost ONNX Runtime elementwise passes on every other
// activation too (MiniLM-L6: cosine 0.9979, 0.55x fp32 at 1 thread; per_token everywhere
// 0.9988 at 0.61x; per tensor 0.9935 at 0.46x). The graph forms are in quantize/apply_dynamic.h. Exclusions, rules (skip, per_tensor,
// per_channel) and op_types select nodes as in static mode; Conv/ConvTranspose and the other op
// types stay float and are listed.
// float_gelu_inputs=true (default; dynamic_activations=per_tensor only): a MatMul/Gemm whose input is a
// GELU output (a Gelu node, or a Mul reaching an Erf/Tanh within three Mul/Add/Div/Sub producers) keeps that input float and gets
// its weight as an int8 per-channel weight point behind DequantizeLinear; the point's note and the
// stat layers_float_input say so. A per-tensor run-time range over a GELU output's outlier
// channels costs a transformer most of its accuracy (MiniLM: docs/benchmarks.md).
// smooth_quant=ALPHA with calib=DIR (quantize/smooth.h): LayerNormalization outputs are smoothed
// before the weights are quantized (folding only, no inserted Muls); recorded, replayed without data.
// embeddings=true (the default in mode=dynamic and weight_only; states recorded before it was
// replay with false): a Gather table (input 0 a float32 constant [rows, width] that only Gathers
// read along axis 0) becomes int8 with one scale per column, i.e. per embedding dimension (per
// tensor with per_channel=false; per column, not per row: a few dimensions of a trained table run
// far larger than the rest in every row, MiniLM held-out cosine mean / min 0.99622 / 0.98480 per
// column, 0.99620 / 0.98042 per row, 0.99555 / 0.98145 per table), written as a
// gathered weight point: each Gather reads the int8 codes and a DequantizeLinear along the last
// axis follows it (quantize/apply_gather.h), so a run dequantizes only the rows it reads (opset
// >= 13 per column). Points recorded before `gathered` existed keep their form on replay:
// table_quantized -> DequantizeLinear -> table -> Gather.
// Does not apply to: MatMul/Gemm whose weight is not a float32 constant matrix, whose input is not
// float32, whose weight is shared with a node left float or quantized differently, or is a graph
// input or output; Gemm with other attributes. Each is listed in the record with its reason.
#pragma once
#include "ir/graph.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/points.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

/// The points of dynamic mode from a static selection: moves the nodes it cannot rewrite into
/// sel.skipped (sel.nodes keeps the rewritten ones) and returns one dynamic point per input
/// activation (its consumers: the nodes reading it) and one weight point per weight.
Points dynamic_points(const ir::Model& model, Selection& sel, const Config& cfg);

/// The Gather tables of the main graph (float32 constants [rows, width] that only axis-0 Gathers
/// read) as gathered int8 weight points with one scale per column (per tensor with
/// per_channel=false), their consumers the Gathers; counted in pts.embeddings. Used by
/// embeddings=true in the dynamic and weight_only modes.
void add_embedding_points(const ir::Model& model, const Config& cfg, Points& pts);

/// DynamicQuantizeLinear needs ai.onnx opset >= 11: raises plan's opset (and the IR version to
/// >= 6) when the model's ops allow it, else UnsupportedError naming the op.
/// Per-row embedding tables need opset >= 13 (DequantizeLinear with an axis).
void require_dynamic_opset(const ir::Model& model, const Selection& sel, const Points& pts, Plan& plan);

}  // namespace mcc::transforms::quantize
