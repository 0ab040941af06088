// Activation-aware weight scaling for quantize{mode=weight_only awq=true} (AWQ, Lin et al. 2023):
// a few input channels of a layer carry most of its activation magnitude, and their weight rows
// matter most; scaling those rows up before block quantization gives them finer codes. For each
// activation X read by weight-only MatMuls (sites: quantize/smooth_sites.h, a constant-vector Mul
// such as an RMSNorm gamma taking 1/s where it can, else an inserted Mul):
//   s[j] = mean|X[:, j]|^alpha, normalized by sqrt(max s * min s)
//   W'[j, :] = s[j] W[j, :],  X' = X / s   (the float model is unchanged up to rounding)
// alpha is searched per site over 0, 1/G, ..., (G-1)/G (G = awq_grid), sites in
// parallel (each on its own: the choice does not depend on the thread count): the one whose quantized
// readers give the least squared output error ||X (W - diag(1/s) Q(diag(s) W))||^2 on a sample of
// calibration rows (512 at most, drawn uniformly by a fixed-seed reservoir) wins; alpha = 0 (no
// scaling) when nothing beats plain rounding, and the site is listed in `skipped`. Q is the
// stage's block format (bits, block_size, zero points, scale_search) rounded to nearest; GPTQ, when
// chosen, then quantizes the scaled weights with Hessians of the scaled inputs.
// awq_clip=true (default) then narrows each block's range where that lowers its output error on
// the same rows (quantize/awq_clip.h); the clamped weights are what the rounding sees.
// Statistics come from one calibration pass over the float model. The record (the stage's `awq`)
// holds every site's alpha, errors and scales; replay applies them with no data.
// Does not apply to: sites smooth_sites.h refuses (listed in `skipped` with the reason), or without
// calibration data (UsageError).
#pragma once
#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/pipeline/pass.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

struct AwqResult {
  bool enabled = false;
  int64_t sites = 0, readers = 0, muls = 0, scaled_muls = 0, layer_norms = 0, clipped_blocks = 0;
  nlohmann::ordered_json record = nlohmann::ordered_json::object();  // {grid, rows, layers, skipped}
};

/// awq=true: picks and applies the scales among `sel`'s weight-only MatMuls (sel: the candidates
/// that have a weight-only form). Nothing (enabled = false) when cfg.awq is false.
AwqResult awq_scale(ir::Model& model, const Selection& sel, const Config& cfg, const PassContext& ctx);

/// Applies a recorded `awq` record (replay, no data); ModelError when a site does not fit.
AwqResult apply_awq_record(ir::Model& model, const nlohmann::ordered_json& rec);

/// Adds awq_sites, awq_readers, awq_inserted_muls and awq_clipped_blocks to the stage's stats when enabled.
void add_awq_stats(nlohmann::ordered_json& stats, const AwqResult& a);

}  // namespace mcc::transforms::quantize
