// The quantize stage's options, read and checked once (quantize/quantize.cpp): every UsageError
// about an option's value comes from here, in a fixed order, before the stage looks at the model.
// The CLI calls it too so `mcc quantize` refuses a bad value before reading the model. Does not
// check what needs the model (op types, exclude and rules matches: quantize/select.h).
#pragma once
#include <cstdint>
#include <string>

#include "transforms/pipeline/pass.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/select.h"
#include "transforms/quantize/target.h"

namespace mcc::transforms::quantize {

/// mode=weight_only settings (quantize/weight_only.h).
struct WeightOnlyConfig {
  int bits = 4;                   // 4 or 8
  int64_t block_size = 32;        // power of two >= 16, along the MatMul weight's K axis
  bool zero_point = true;         // asymmetric blocks (uint4/uint8 with zero points), else symmetric
  bool scale_search = false;      // each block's range searched for the least rounding error
  bool gptq = false;              // algorithm=gptq (else rtn)
  double damp = 0.01;             // GPTQ: fraction of the mean Hessian diagonal added to it
  bool act_order = false;         // GPTQ: rows in order of decreasing Hessian diagonal
  int64_t lazy_block = 128;       // GPTQ: rows updated together (lazy batch updates)
  bool matmul_nbits = false;      // weight_format=matmul_nbits: com.microsoft.MatMulNBits nodes
  int64_t lm_head_block_size = 32;  // bits=4: block size of a layer writing causal-LM logits when smaller (0: off)
  double ratio = 1;               // bits=4: least share of weight elements at 4 bits; the rest 8-bit (mixed_bits.h)
};

struct Config {
  const Target* target = nullptr; // target=: the layout the runtime fuses (quantize/target.h)
  SelectConfig select;            // op types (the target's when op_types is empty) and per-node defaults
  std::string method;             // as written (minmax, percentile, entropy, mse, auto)
  bool auto_method = false;       // method=auto: per activation, the measured best range method
  double percentile = 99.99;      // for method=percentile, in (50, 100]
  int64_t samples = 0;            // calibration samples used (0: all)
  int64_t holdout = 0;            // last samples of the folder kept out of calibration (for a check)
  std::string calib;              // calibration folder as written (relative: to the pipeline's folder)
  bool symmetric_unsigned = false;  // symmetric ranges for uint8/uint16 activations too
  bool quantize_bias = true;
  bool depthwise_per_channel = true;  // per-channel scales on depthwise convolution inputs
  bool bias_correction = true;
  double widen_db = 0;            // 16 bits below this estimated 8-bit SNR (0: never)
  double mixed_target = 0;        // measured: keep float until mean cosine >= this (0: off)
  int64_t keep_top = 0;           // measured: keep exactly this many float (0: off)
  int64_t sensitivity_samples = 4;
  double smooth_alpha = 0;        // smooth_quant=ALPHA: SmoothQuant migration strength in (0, 1] (0: off; quantize/smooth.h)
  bool smooth_alpha_search = true;   // smooth_quant_search: per site, the strength with the least estimated noise
  bool smooth_insert = true;      // smooth_quant_insert: a Mul smooths MatMul inputs no LayerNormalization produces
  bool wide_fallback = false;     // mixed_fallback=16bit and a mixed search asked for
  bool measured = false;          // method=auto, mixed_target or keep_float_top: the measure runs
  bool dynamic = false;           // mode=dynamic: activations quantized at run time (quantize/dynamic.h)
  bool embeddings = false;        // mode=dynamic: Gather tables stored as int8 too
  bool float_gelu_inputs = true;  // mode=dynamic: MatMul/Gemm reading a GELU output keep a float input
                                  // (per-tensor activations only)
  bool per_token = false;         // mode=dynamic: one run-time range per row of each activation
  bool per_token_ffn = false;     // mode=dynamic: per-row ranges on feed-forward activations only (quantize/dynamic.h)
  bool awq = false;               // awq=true: activation-aware weight scales before weight-only rounding (quantize/awq.h)
  int64_t awq_grid = 20;          // awq: strengths tried per site
  bool awq_clip = true;           // awq: per-block clip search after the scales (quantize/awq_clip.h)
  bool weight_only = false;       // mode=weight_only: block-wise int4/int8 MatMul weights (quantize/weight_only.h)
  WeightOnlyConfig weight_only_cfg;

  /// Whether an activation of type `dt` is quantized with a symmetric range.
  bool symmetric(ir::DType dt) const { return is_signed_activation(dt) || symmetric_unsigned; }
};

/// Reads the stage's options; UsageError (one line, "quantize: ...") for a value out of range or
/// a combination that contradicts itself.
Config read_config(const Options& o);

/// A calibration run over the stage's samples: calib resolved against the pipeline's folder,
/// samples, holdout and threads from the stage (no histograms, nothing watched yet). UsageError
/// "quantize: <what_needs_data>; set calib=DIR (mcc quantize --calib DIR)" without calib.
CalibrationConfig calibration_config(const Config& cfg, const PassContext& ctx, const std::string& what_needs_data);

}  // namespace mcc::transforms::quantize
