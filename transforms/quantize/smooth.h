// SmoothQuant for the quantize stage (smooth_quant=ALPHA, static mode; Xiao et al. 2022): the
// few activation channels of a transformer with huge magnitudes, which ruin a per-tensor int8
// range, are moved into the weights that read them. For a LayerNormalization (last axis) whose
// output is read by quantized MatMul/Gemm layers with float32 constant weights:
//   s[j] = max|X[:, j]|^alpha / max|W[j, :]|^(1 - alpha)   (W rows over every reader)
//   gamma'[j] = gamma[j] / s[j], beta'[j] = beta[j] / s[j], W'[j, :] = s[j] W[j, :]
// so X' = X / s and X' W' = X W: the float model is unchanged up to rounding, and where nothing
// else reads X the graph gains no node. Guards: a zero or non-finite maximum gives s = 1; s is clamped to [1e-5, 1e5]. The
// activation maxima come from one calibration pass over the float model (the same samples as the
// stage's calibration), which then calibrates the smoothed model.
// Readers that are not quantized (the residual Add of a post-LN transformer such as BERT/MiniLM)
// must keep the float value: they get a copy of the LayerNormalization with the original gamma and
// beta (one node added per such layer, recorded as `float_copy` with its `float_readers`);
// Shape/Size readers keep reading the smoothed output (its shape is the same).
// Does not apply to: LayerNormalizations over more than the last axis, with a scale or bias that
// is not a float32 constant vector (or is a graph input), whose output is a graph output, is read
// inside a subgraph, or is read by a quantized node other than a MatMul/Gemm taking it as input A
// with a float32 constant weight of as many rows as channels (Gemm without transA), or whose
// readers' weights are read by other nodes or are graph outputs. Each is listed in the record's
// `skipped` with its reason. A scale or bias shared with other nodes is copied (copy-on-write,
// recorded in `copied`).
// Inputs no LayerNormalization produces (smooth_quant_insert=true, default; the attention context
// and GELU outputs of a transformer): a Mul by 1/s is inserted before the first reader; its output
// takes the input's name (so the quantization point follows) and the original becomes
// '<x>_unsmoothed', still read by readers that stay float; s goes into the readers' weight rows.
// One node per such input, recorded as `mul`. Every site (LayerNormalization or Mul) is smoothed
// only where it lowers the estimated int8 output noise of its readers (uniform rounding noise of a
// per-tensor uint8 activation step spread through the scaled weights, plus each output column's
// int8 weight step spread through the scaled input power E[(x/s)^2]); otherwise it is listed in
// `skipped` with both estimates. smooth_quant_search=true (default) picks each site's strength
// among ALPHA and 0.3, 0.4, ..., 0.9 by the same estimate and records it (`alpha`).
// Replay applies the recorded scales with no data; a record that does not fit the model is a
// ModelError.
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/pipeline/pass.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

struct Smoothed {
  bool enabled = false;        // smooth_quant > 0 (or a replayed record)
  int64_t layers = 0;          // LayerNormalizations smoothed
  int64_t readers = 0;         // MatMul/Gemm weights scaled
  int64_t float_copies = 0;    // LayerNormalizations added for readers that keep the float value
  int64_t muls = 0;            // Muls inserted before MatMul/Gemm inputs no LayerNormalization produces
  nlohmann::ordered_json record = nlohmann::ordered_json::object();  // {alpha, layers, skipped}
};

/// smooth_quant=ALPHA: finds the LayerNormalizations to smooth among `sel`'s readers, calibrates
/// their outputs' per-channel maxima on the float model, and applies the scales to `model`.
/// Nothing (enabled = false) when cfg.smooth_alpha is 0.
Smoothed smooth_quant(ir::Model& model, const Selection& sel, const Config& cfg, const PassContext& ctx);

/// Applies a recorded smooth_quant record (replay, no data); ModelError when a layer does not fit.
Smoothed apply_smooth_record(ir::Model& model, const nlohmann::ordered_json& rec);

/// Adds smooth_quant_layers, _readers and _float_copies to the stage's stats when enabled.
void add_smooth_stats(nlohmann::ordered_json& stats, const Smoothed& s);

}  // namespace mcc::transforms::quantize
