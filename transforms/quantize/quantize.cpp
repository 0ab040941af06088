// quantize: INT8 static post-training quantization in QDQ form (QuantizeLinear/DequantizeLinear),
// the form ONNX Runtime, TensorRT and OpenVINO consume.
//
// Before:  Y = Conv(X, W, B)                                          all float32
// After:   Xq = QuantizeLinear(X_float, sx, zx);  X = DequantizeLinear(Xq, sx, zx)
//          W  = DequantizeLinear(W_quantized: int8, sw[c], 0, axis=0)
//          B  = DequantizeLinear(B_quantized: int32, sx*sw[c], 0, axis=0)
//          Y  = Conv(X, W, B)
//
// Dynamic mode (mode=dynamic; quantize/dynamic.h, quantize/apply_dynamic.h): MatMul/Gemm layers
//   get int8 weights offline and their input quantized at run time (DynamicQuantizeLinear ->
//   MatMulInteger -> Cast -> Mul by a_scale * w_scale[n], then a Gemm's bias Add), the form ONNX
//   Runtime's quantize_dynamic writes; nothing is calibrated, activations are recorded as dynamic
//   points with no scale; embeddings=true also stores Gather tables as int8 (per column).
// Weight-only mode (mode=weight_only; quantize/weight_only.h, quantize/apply_blocked.h): MatMul
//   weights as int4/uint4/int8/uint8 blocks of block_size rows along K, activations float;
//   algorithm=rtn (no data) or gptq (calibrated layer-input Hessians; codes recorded); written as
//   DequantizeLinear(block_size) -> MatMul (opset 21) or com.microsoft.MatMulNBits. The
//   sections below are about static mode.
// Formulas. Activations (default asymmetric uint8) from a calibrated range [lo, hi] ∋ 0:
//   s = (hi - lo) / (qmax - qmin), z = clamp(round(qmin - lo / s)); signed types (int8, int16)
//   are symmetric: s = max(|lo|, |hi|) / qmax, z = 0. Weights: symmetric int8, per output
//   channel by default (Conv axis 0, ConvTranspose axis 1, Gemm axis 1 or 0 with transB, MatMul
//   axis 1): s[c] = max|W[c]| / 127, q = clamp(round_half_even(W / s[c]), -127, 127). Bias of
//   Conv/ConvTranspose/Gemm: int32, s_b[c] = float(s_x * s_w[c]), q = round(B / s_b[c]).
// Bias overflow guard (quantize/bias.h): when |q| would exceed 2^30 (headroom below 2^31 for the
//   accumulator), the weight scale of that channel (or of the tensor, per-tensor) is widened to
//   |B[c]| / (s_x * 2^30) so the bias fits, and the point's note records old and new scale.
// Bias correction (bias_correction=true, quantize/bias.h, quantize/tune.h): each Conv/Gemm bias
//   becomes B - sum (Wq - W) E[x] with per-channel input means streamed during calibration; the
//   amounts are recorded (record.bias_correction) and replayed without data. On by default: it
//   costs one pass over the weights and removes the mean shift weight rounding causes.
// 16-bit activations (widen_below_db=D, default 0 = off; quantize/ranges.h): an input whose
//   estimated 8-bit SNR at its Conv/Gemm (quantize/tune.h) is below D dB becomes uint16/int16;
//   its consumer's bias stays float32. The result is then W8A16, not int8, and the record's
//   'widened' and the stats activations_16bit / layers_all_8bit say so.
// Measured sensitivity (quantize/sensitivity.h, quantize/mixed.h; opt-in): method=auto picks,
//   per activation, the range method among minmax/percentile/mse whose output cosine is best when
//   that activation alone is quantized (cpu Executor, first sensitivity_samples=4 calibration
//   samples); mixed_target=C keeps the activations with the largest measured cost float (their
//   Conv keeps int8 weights and a float bias) until the whole model measures mean cosine >= C;
//   keep_float_top=K keeps exactly K float; mixed_fallback=16bit gives them uint16/int16 with
//   minmax ranges instead (opset 21, their biases float). Stats activations_kept_float and
//   layers_all_8bit, record.mixed (every loss, every k measured) and skipped_tensors say what is
//   not int8; replay needs no data. The target is met on calibration samples: set it a little
//   above the bar wanted on other data. Off by default: the measure runs the model once per
//   activation and candidate on each sample. Measured figures: docs/benchmarks.md.
// SmoothQuant (smooth_quant=ALPHA in (0, 1], static mode, off by default; quantize/smooth.h): for
//   each LayerNormalization (last axis, constant gamma/beta) read by quantized MatMul/Gemm
//   layers with constant weights, one calibration pass over the float model gives each channel's
//   max |x|; s[j] = max|x_j|^ALPHA / max|W_j|^(1-ALPHA) is folded as gamma/s, beta/s and s*W
//   (rows j), so outlier channels stop setting the int8 range; readers that stay float (a
//   residual Add) get a copy of the LayerNormalization, else the graph gains no node. The stage
//   then calibrates the smoothed model. Inputs no LayerNormalization produces get an inserted Mul
//   by 1/s (smooth_quant_insert=true); a site is smoothed only where the estimated int8 output
//   noise drops, with its strength searched among ALPHA and 0.3..0.9 (smooth_quant_search=true).
//   record.smooth_quant holds every scale (replayed with no data) and what was left alone, with its
//   reason; stats smooth_quant_layers/_muls/_readers/_float_copies.
// Weight rounding (algorithm=auto or gptq, quantize/static_gptq.h; rtn: to nearest): GPTQ chooses the int8
//   codes of Conv/Gemm/MatMul weights under the scales above from the Hessian of each layer's float
//   inputs on the calibration data (a second pass); the codes are recorded, bias correction uses them.
// Depthwise inputs (quantize/depthwise.h, depthwise_per_channel=true): an activation read only by
//   depthwise Convs gets one scale per channel (axis 1) from its per-channel calibrated range.
// Shared scales: the quantized inputs of a Concat are one group with the union of their ranges.
// Calibration (calibration.h): the float model runs over the `calib` folder sample by sample
//   with streaming statistics; methods minmax, percentile, entropy, mse.
// Selection: op_types (default Conv, ConvTranspose, Gemm, MatMul; also Add, Mul, Sub, Concat,
//   MaxPool, AveragePool, GlobalAveragePool, Resize, Reshape, Flatten, Transpose: their float
//   inputs get QDQ), exclude= and rules= (ordered PATTERN:action[+action], first match wins)
//   match nodes as every stage does (transforms/common/node_filter.h); each item must match a
//   quantized node (exit 2 otherwise); the record lists what each rule and item matched.
// Opset (quantize/opset.h): per-channel QDQ needs ai.onnx opset >= 13, per-tensor >= 10, 16-bit
//   activations >= 21. A lower opset is raised when every op in the model keeps its meaning
//   (quantize/policy.cpp); otherwise the stage refuses (exit 4) naming the op. The IR version
//   is raised with it (>= 7 for opset 13); an IR < 4 model's initializer inputs stop being
//   listed as graph inputs (they were constants).
// Steps of a run, one function each: options (quantize/config.h), selection (quantize/select.h),
//   opset requirements, calibration (below), activation ranges and 16-bit widening
//   (quantize/ranges.h), measured sensitivity, points (quantize/points.h, bias points in
//   quantize/bias.h), bias correction, census, stats and record (quantize/record.h), apply_plan.
// Does not apply when: the main graph already holds QuantizeLinear/DequantizeLinear (the stage
//   does nothing and says so; quantizing twice would compound error); nodes in If/Loop/Scan
//   bodies; weights that are not float32 constants (MatMul/Gemm of two activations quantizes both
//   as activations); weights shared by nodes quantized differently, graph inputs or outputs;
//   tensors the calibration never saw as float32. Each is listed in the record with its reason.
// Names: see quantize/apply.cpp (the dequantized value keeps the original name).
// Replay: with a record from a state, the recorded points (scales, zero points, axes, dtypes)
//   are applied as they are, with no calibration data; a record that names a tensor the model
//   lacks, or another opset, is a ModelError (exit 3).
#include "transforms/quantize/quantize.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "ir/errors.h"
#include "transforms/quantize/awq.h"
#include "transforms/quantize/bias.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/depthwise.h"
#include "transforms/quantize/dynamic.h"
#include "transforms/quantize/opset.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/points.h"
#include "transforms/quantize/ranges.h"
#include "transforms/quantize/record.h"
#include "transforms/quantize/select.h"
#include "transforms/quantize/sensitivity.h"
#include "transforms/quantize/smooth.h"
#include "transforms/quantize/static_gptq.h"
#include "transforms/quantize/weight_only.h"


namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

/// The calibration step's outcome.
struct Calibrated {
  CalibrationResult result;
  json record = json::object();  // record.calibration (empty when nothing needed calibration)
  std::string dir;               // the resolved folder ("" when nothing needed calibration)
};

/// A progress bar on stderr when it is a terminal (none otherwise).
std::function<void(size_t, size_t)> progress_bar() {
  if (::isatty(STDERR_FILENO) == 0) return nullptr;
  return [](size_t done, size_t total) {
    const int width = 30;
    const int fill = static_cast<int>(width * done / std::max<size_t>(total, 1));
    std::fprintf(stderr, "\rquantize: calibrating [%s%s] %zu/%zu", std::string(fill, '#').c_str(),
                 std::string(width - fill, ' ').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

/// Runs the float model over the calibration folder, watching the selected activations (ranges)
/// and the inputs of weighted nodes (per-channel moments, for bias correction and the 16-bit
/// estimate). Nothing to calibrate: no data needed, an empty result.
Calibrated calibrate_selection(const ir::Model& model, const Selection& sel, const Config& cfg, const PassContext& ctx) {
  Calibrated out;
  std::vector<std::string> watch;
  bool histograms = cfg.auto_method;
  for (const auto& a : sel.activations) {
    watch.push_back(a.name);
    histograms = histograms || a.settings.method != CalibMethod::MinMax;
  }
  if (watch.empty()) return out;
  std::vector<std::string> channel_watch, per_channel_watch;
  for (const auto& a : sel.activations)
    if (a.per_channel) per_channel_watch.push_back(a.name);
  if (cfg.bias_correction || cfg.widen_db > 0)
    for (const auto& c : sel.nodes)
      if (c.slots.weight >= 0 && c.node->input(0) &&
          std::find(channel_watch.begin(), channel_watch.end(), c.node->input(0)->name) == channel_watch.end())
        channel_watch.push_back(c.node->input(0)->name);
  CalibrationConfig cc = calibration_config(cfg, ctx, std::to_string(watch.size()) + " activations need calibration data");
  out.dir = cc.data_dir;
  cc.histograms = histograms;
  cc.channel_watch = channel_watch;
  cc.per_channel_watch = per_channel_watch;
  cc.progress = progress_bar();
  const auto t0 = std::chrono::steady_clock::now();
  out.result = calibrate(model, watch, cc);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("quantize: calibrated {} tensors over {} samples in {:.2f} s", watch.size(), out.result.samples, secs);
  out.record["data"] = cfg.calib;
  out.record["samples"] = out.result.samples;
  out.record["files"] = out.result.files;
  out.record["sha256"] = out.result.sha256;
  out.record["method"] = cfg.method;
  if (histograms) out.record["histogram_bins"] = 2 * TensorStats::kHalfBins;
  return out;
}

/// What each rule and exclude item matched, for the record.
json matched_json(const Rules& rules, const NodeFilter& excludes) {
  json rj = json::array();
  for (const auto& r : rules) rj.push_back({{"rule", r.text}, {"matched", r.matched}});
  json ej = json::array();
  for (const auto& x : excludes) ej.push_back({{"item", x.text}, {"matched", x.matched}});
  return json{{"rules", rj}, {"exclude", ej}};
}

/// The model already holds QDQ nodes: nothing changes, and the record says so.
PassResult already_quantized() {
  spdlog::warn("quantize: the model already holds QuantizeLinear/DequantizeLinear nodes; nothing was changed "
               "(quantizing twice compounds error; quantize the float model instead)");
  PassResult res;
  res.stats["already_quantized"] = true;
  json rec;
  rec["format"] = 1;
  rec["already_quantized"] = true;
  res.record = rec;
  return res;
}

class QuantizePass : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo kInfo{
        "quantize",
        "INT8 post-training quantization: static in QDQ form (calibrated activations, per-channel weights, int32 bias), "
        "or dynamic (mode=dynamic: MatMul/Gemm int8 weights, activations quantized at run time)",
        {
            {"calib", OptionType::String, "", "Calibration data folder (relative to the pipeline file's folder, or the cwd)", {}},
            {"target", OptionType::String, "ort",
             "Runtime the model is laid out for (quantize/target.h): ort (ONNX Runtime's QDQ fusion: QDQ around "
             "every op it runs in int8, one scale per activation), openvino (QDQ on the inputs of weighted ops, Add, "
             "Concat and pooling, one scale per activation) or generic (QDQ on weighted ops' inputs, per-channel "
             "depthwise inputs: mcc's most accurate layout)", {"ort", "openvino", "generic"}, "generic"},
            {"samples", OptionType::Int, "0", "Use at most this many calibration samples (0: all)", {}},
            {"holdout", OptionType::Int, "0",
             "Keep the folder's last K samples out of calibration (a check stage with the same holdout judges on them)", {}},
            {"method", OptionType::String, "minmax",
             "Activation range method (auto: per activation, the one of minmax/percentile/mse whose measured output "
             "cosine is best)", {"minmax", "percentile", "entropy", "mse", "auto"}},
            {"percentile", OptionType::Float, "99.99", "Percentile kept by method=percentile, in (50, 100]", {}},
            {"per_channel", OptionType::Bool, "true", "One weight scale per output channel (else one per tensor)", {}},
            {"depthwise_per_channel", OptionType::Bool, "true",
             "One activation scale per channel on inputs read only by depthwise convolutions (target=generic only: "
             "the other targets' runtimes take one scale per activation)", {}, "false"},
            {"activation_type", OptionType::String, "target",
             "Activation type (uint8 asymmetric, int8 symmetric; 16-bit needs opset 21; target: int8 for "
             "target=openvino, else uint8)", {"uint8", "int8", "uint16", "int16", "target"}, "uint8"},
            {"weight_type", OptionType::String, "int8", "Weight type (symmetric)", {"int8"}},
            {"symmetric_activations", OptionType::Bool, "false", "Symmetric ranges for unsigned activations too", {}},
            {"op_types", OptionType::StringList, "", "Ops to quantize (empty: the target's list)", {},
             "Conv,ConvTranspose,Gemm,MatMul"},
            {"exclude", OptionType::StringList, "", "Nodes kept in float: names, output names, op types or regexes", {}},
            {"rules", OptionType::StringList, "",
             "Ordered per-layer rules REGEX:action[+action], first match wins (skip, per_tensor, per_channel, "
             "uint8, int8, uint16, int16, minmax, percentile, entropy, mse)", {}},
            {"quantize_bias", OptionType::Bool, "true", "Quantize Conv/Gemm biases to int32", {}},
            {"bias_correction", OptionType::Bool, "true",
             "Correct Conv/Gemm biases by the expected output shift of weight rounding (calibrated input means)", {}},
            {"smooth_quant", OptionType::Float, "0",
             "SmoothQuant: move activation outliers of LayerNormalization outputs read by quantized MatMul/Gemm into "
             "their weights, s = max|X|^a / max|W|^(1-a), with this a in (0, 1] (0: off; static mode)", {}},
            {"smooth_quant_search", OptionType::Bool, "true",
             "smooth_quant: per smoothed input, the strength among ALPHA and 0.3..0.9 with the least estimated int8 "
             "output noise (recorded per site); false: ALPHA everywhere", {}, "false"},
            {"smooth_quant_insert", OptionType::Bool, "true",
             "smooth_quant: also smooth quantized MatMul/Gemm inputs that no LayerNormalization produces (attention "
             "context, GELU outputs) through an inserted Mul by 1/s (one node per input), as ONNX Runtime's SmoothQuant "
             "does; false: LayerNormalization folding only", {}, "false"},
            {"widen_below_db", OptionType::Float, "0",
             "Give 16-bit activations (uint16/int16, opset raised to 21) to inputs whose estimated 8-bit SNR at "
             "their Conv/Gemm is below this many dB (0: never)", {}},
            {"mixed_target", OptionType::Float, "0",
             "Keep the activations whose measured 8-bit cost is largest in float until the mean output cosine on "
             "calibration samples reaches this value (0: off)", {}},
            {"keep_float_top", OptionType::Int, "0", "Keep exactly this many most damaging activations in float (0: off)", {}},
            {"mixed_fallback", OptionType::String, "float",
             "What mixed_target/keep_float_top give the chosen activations: float, or 16bit (uint16/int16 minmax, "
             "opset raised to 21)", {"float", "16bit"}},
            {"sensitivity_samples", OptionType::Int, "4",
             "Calibration samples used to measure sensitivities (method=auto, mixed_target, keep_float_top)", {}},
            {"mode", OptionType::String, "static",
             "static: calibrated activations in QDQ form; dynamic: MatMul/Gemm with int8 weights and activations "
             "quantized at run time (DynamicQuantizeLinear + MatMulInteger, no calibration); weight_only: MatMul "
             "weights int4/int8 in blocks along K, activations float (DequantizeLinear with block_size, opset 21, "
             "or com.microsoft.MatMulNBits)", {"static", "dynamic", "weight_only"}},
            {"embeddings", OptionType::Bool, "true",
             "Also store Gather tables (float32 constant [rows, width], read only by Gathers) as int8, one scale per column "
             "(per tensor with per_channel=false); each Gather reads the int8 rows and a DequantizeLinear follows it, so "
             "no runtime dequantizes the whole table", {}, "false"},
            {"float_gelu_inputs", OptionType::Bool, "true",
             "mode=dynamic: MatMul/Gemm layers reading a GELU output keep a float input (their weights int8 per "
             "channel behind DequantizeLinear): one run-time uint8 range over a GELU output's outlier channels "
             "costs most of a transformer's accuracy (dynamic_activations=per_tensor only)", {}, "false"},
            {"dynamic_activations", OptionType::String, "auto",
             "mode=dynamic: per_token (each row of an activation, e.g. each token, centred and scaled to [-1, 1] "
             "by its own run-time min/max before DynamicQuantizeLinear; the MatMul/Gemm outputs are rescaled row "
             "by row), per_tensor (one run-time range per activation, ONNX Runtime quantize_dynamic's form) or "
             "auto (per_token on every activation of a causal LM, a graph output named like logits of rank 3; "
             "otherwise per_token on feed-forward activations, a GELU output and the input of a layer feeding a "
             "GELU, and per_tensor elsewhere, where a row's own range buys little for its run time)",
             {"auto", "per_token", "per_tensor"}, "per_tensor"},
            {"bits", OptionType::Int, "4", "mode=weight_only: bits per weight (4 or 8)", {}},
            {"ratio", OptionType::Float, "1",
             "mode=weight_only bits=4: least share of the weights' elements at 4 bits; the weights whose 4-bit "
             "rounding costs most (weighted by calibration inputs under gptq) become 8-bit (NNCF's ratio)", {}},
            {"lm_head_block_size", OptionType::Int, "32",
             "mode=weight_only bits=4: blocks of a layer writing causal-LM logits (a graph output whose name holds "
             "'logits') when smaller than block_size: its rounding costs an LLM the most (0: off)", {}, "0"},
            {"block_size", OptionType::Int, "32",
             "mode=weight_only: weights per scale along the MatMul weight's K axis (a power of two >= 16)", {}},
            {"weight_zero_point", OptionType::Bool, "true",
             "mode=weight_only: asymmetric blocks with zero points (uint4/uint8, ONNX Runtime MatMulNBitsQuantizer's "
             "default), else symmetric (int4/int8)", {}, "false"},
            {"scale_search", OptionType::Bool, "false",
             "mode=weight_only: choose each block's range (shrunk by 1..0.6, or the int4 -8 code for the largest "
             "magnitude) by the least squared rounding error, else the full range (default: lower weight error, "
             "but clipping each block's largest weights costs an LLM perplexity)", {}, "true"},
            {"awq", OptionType::Bool, "false",
             "mode=weight_only: activation-aware scales (AWQ): per MatMul input, each channel's weight rows scaled "
             "by its mean magnitude to a power searched for the least quantized output error on calibration rows, "
             "the input divided back (into a norm's constant where one produces it); needs calib", {}},
            {"awq_grid", OptionType::Int, "20", "awq: strengths tried per input (0, 1/G, ..., (G-1)/G)", {}},
            {"awq_clip", OptionType::Bool, "true",
             "awq: then narrow each block's range (1, 0.95, ..., 0.5 of it) where that lowers its output error on the "
             "same calibration rows", {}},
            {"algorithm", OptionType::String, "auto",
             "How weights are rounded: rtn (to nearest), gptq (rounding that compensates each input feature's "
             "error on the features not yet rounded, from the Hessian of the layer inputs on calibration data; "
             "mode=weight_only, and mode=static for the int8 weights of Conv, Gemm and MatMul, their scales kept) "
             "or auto (rtn in every mode; records with gptq codes replay them)",
             {"auto", "rtn", "gptq"}, "rtn"},
            {"gptq_damp", OptionType::Float, "0.01", "algorithm=gptq: fraction of the mean Hessian diagonal added to it", {}},
            {"gptq_act_order", OptionType::Bool, "false",
             "algorithm=gptq: quantize rows in order of decreasing Hessian diagonal (block scales from the float weights)", {}},
            {"gptq_block", OptionType::Int, "128", "algorithm=gptq: rows per lazy batch update", {}},
            {"weight_format", OptionType::String, "target",
             "mode=weight_only: qdq (DequantizeLinear with block_size -> MatMul, opset 21), matmul_nbits "
             "(ONNX Runtime's com.microsoft.MatMulNBits) or target (matmul_nbits for target=ort, else qdq)",
             {"qdq", "matmul_nbits", "target"}, "qdq"},
        },
        {{"fp16", "calibration and QDQ scales need the float32 model; fp16 and quantize are alternatives"}}};
    return kInfo;
  }

  PassResult run(ir::Model& model, PassContext& ctx) override {
    const Options& o = ctx.options;
    const Config cfg = read_config(o);
    if (ctx.replay && !ctx.replay->empty()) return replay(model, *ctx.replay);
    auto excludes = parse_excludes(o.get_list("exclude"));
    auto rules = parse_rules(o.get_list("rules"));
    Selection sel = select(model, cfg.select, excludes, rules);
    if (sel.already_quantized) return already_quantized();
    const json matched = matched_json(rules, excludes);
    if (cfg.dynamic) return run_dynamic(model, sel, cfg, matched, ctx);
    if (cfg.weight_only) return run_weight_only(model, sel, cfg, matched, ctx);
    if (cfg.depthwise_per_channel) mark_depthwise_inputs(sel);

    Plan plan = unchanged_plan(model);
    require_opset(model, sel, any_16bit(sel), plan);  // before any calibration work
    const Smoothed smooth = smooth_quant(model, sel, cfg, ctx);  // calibrates the float model; then it is smoothed
    const Calibrated calib = calibrate_selection(model, sel, cfg, ctx);
    fill_channel_ranges(sel, calib.result, cfg);
    ActivationRanges acts = activation_ranges(sel, calib.result, cfg);
    if (widen_activations(sel, calib.result, cfg, acts)) require_opset(model, sel, true, plan);
    Measured measured;
    if (cfg.measured && !calib.dir.empty())
      measured = measure_sensitivity(model, calib.dir, ctx.threads, sel, calib.result, cfg, acts, plan);

    Points points = build_points(model, sel, cfg, acts.ok, acts.range);
    if (cfg.embeddings) add_embedding_points(model, cfg, points);
    const StaticGptq gptq = round_weights_gptq(model, sel, points, cfg, ctx);  // codes only; scales stay
    plan.points = points.points;
    plan.groups = sel.groups;
    ir::Graph& g = *model.graph;
    const BiasCorrections bias = cfg.bias_correction ? correct_biases(g, sel, points, calib.result, gptq.shifts) : BiasCorrections{};
    apply_bias_corrections(g, bias.corrected);
    const Census census = layer_census(g, sel, points);  // before apply_plan renames values
    // Points whose node's activation could not be calibrated still quantize weights (weight-only).
    apply_plan(model, plan);

    PassResult res;
    res.modified = !plan.points.empty();
    res.stats = stage_stats(sel, plan, points, calib.result.samples, bias, measured, census);
    if (gptq.enabled) res.stats["gptq_weights"] = gptq.layers;
    if (points.embeddings) res.stats["embedding_tables"] = points.embeddings;  // states from before have none
    add_smooth_stats(res.stats, smooth);
    res.record = stage_record({plan, calib.record, matched, sel, acts, points, bias, measured, res.stats});
    if (smooth.enabled) res.record["smooth_quant"] = smooth.record;
    if (gptq.enabled) res.record["gptq"] = gptq.record;
    res.record["target"] = cfg.target->name;
    spdlog::info("quantize: {} nodes, {} activations, {} weights, {} biases, {} shared-scale groups", sel.nodes.size(),
                 points.activation.size(), points.weights, points.biases, plan.groups.size());
    return res;
  }

 private:
  /// mode=dynamic: weights offline, activations at run time; nothing is calibrated.
  static PassResult run_dynamic(ir::Model& model, Selection& sel, const Config& cfg, const json& matched,
                                const PassContext& ctx) {
    Plan plan = unchanged_plan(model);
    // smooth_quant with calibration data: LayerNormalization outlier channels folded into the
    // weights before they are quantized (the run-time ranges then cover the smoothed values).
    const Smoothed smooth = smooth_quant(model, sel, cfg, ctx);
    const Points points = dynamic_points(model, sel, cfg);
    require_dynamic_opset(model, sel, points, plan);
    plan.points = points.points;
    const Census census = layer_census(*model.graph, sel, points);  // before apply_plan renames values
    apply_plan(model, plan);
    PassResult res;
    res.modified = !plan.points.empty();
    res.stats = stage_stats(sel, plan, points, 0, BiasCorrections{}, Measured{}, census);
    res.stats["mode"] = "dynamic";
    res.stats["layers_dynamic"] = static_cast<int64_t>(sel.nodes.size()) - points.float_inputs;
    res.stats["layers_float_input"] = points.float_inputs;
    res.stats["embedding_tables"] = points.embeddings;
    add_smooth_stats(res.stats, smooth);
    const json no_calibration = json::object();
    json rec = stage_record({plan, no_calibration, matched, sel, ActivationRanges{}, points, BiasCorrections{}, Measured{}, res.stats});
    json out;
    out["format"] = rec["format"];
    out["mode"] = "dynamic";
    for (auto it = rec.begin(); it != rec.end(); ++it)
      if (it.key() != "format") out[it.key()] = it.value();
    if (smooth.enabled) out["smooth_quant"] = smooth.record;
    res.record = out;
    spdlog::info("quantize: mode=dynamic: {} MatMul/Gemm layers, {} dynamic activations, {} int8 weights", sel.nodes.size(),
                 points.activation.size(), points.weights);
    return res;
  }

  /// mode=weight_only: block-wise MatMul weights; activations stay float (quantize/weight_only.h).
  static PassResult run_weight_only(ir::Model& model, Selection& sel, const Config& cfg, const json& matched,
                                    const PassContext& ctx) {
    Plan plan = unchanged_plan(model);
    require_weight_only_opset(model, cfg, plan);  // before any calibration work
    Selection awq_sel = sel;  // AWQ scales only inputs of layers that have a weight-only form
    std::erase_if(awq_sel.nodes, [](const Candidate& c) { return !weight_only_refusal(c).empty(); });
    const AwqResult awq = awq_scale(model, awq_sel, cfg, ctx);  // before the weights are rounded
    WeightOnlyResult wo = weight_only_points(model, sel, cfg, ctx);
    const Census census = layer_census(*model.graph, sel, wo.points);  // before apply_plan renames values
    plan.points = std::move(wo.points.points);  // GPTQ's codes: one copy (counts and maps stay in wo.points)
    int64_t bytes_before = 0, bytes_codes = 0;
    for (const QPoint& p : plan.points)
      if (const ir::Value* v = model.graph->find_value(p.tensor); p.block_size > 0 && v && v->initializer) {
        const auto nbytes = static_cast<int64_t>(v->initializer->nbytes());
        bytes_before += nbytes;
        bytes_codes += nbytes / 32 * (p.dtype == ir::DType::I4 || p.dtype == ir::DType::U4 ? 4 : 8);
      }
    apply_plan(model, plan);
    const WeightOnlyConfig& w = cfg.weight_only_cfg;
    PassResult res;
    res.modified = !plan.points.empty();
    res.stats = stage_stats(sel, plan, wo.points, wo.samples, BiasCorrections{}, Measured{}, census);
    res.stats["mode"] = "weight_only";
    res.stats["layers_weight_only"] = static_cast<int64_t>(sel.nodes.size());
    res.stats["weight_bytes_float"] = bytes_before;
    res.stats["weight_bytes_quantized"] = bytes_codes;  // codes only; scales come on top
    res.stats["embedding_tables"] = wo.points.embeddings;
    add_awq_stats(res.stats, awq);
    const json calibration = wo.gptq.contains("calibration") ? wo.gptq["calibration"] : json::object();
    json rec = stage_record({plan, calibration, matched, sel, ActivationRanges{}, wo.points, BiasCorrections{}, Measured{}, res.stats});
    json out;
    out["format"] = rec["format"];
    out["mode"] = "weight_only";
    out["weight_format"] = plan.matmul_nbits ? "matmul_nbits" : "qdq";
    out["algorithm"] = w.gptq ? "gptq" : "rtn";
    out["bits"] = w.bits;
    out["block_size"] = w.block_size;
    if (!wo.mixed_bits.is_null()) out["mixed_bits"] = wo.mixed_bits;
    if (awq.enabled) out["awq"] = awq.record;
    if (!wo.lm_heads_fine.empty()) out["lm_head_block_size"] = {{"block_size", w.lm_head_block_size}, {"weights", wo.lm_heads_fine}};
    if (w.gptq) {
      json g = wo.gptq;
      g.erase("calibration");
      out["gptq"] = g;
    }
    for (auto it = rec.begin(); it != rec.end(); ++it)
      if (it.key() != "format") out[it.key()] = std::move(it.value());
    res.record = std::move(out);
    spdlog::info("quantize: mode=weight_only: {} MatMul layers, {} weights as {}-bit blocks of {} ({})", sel.nodes.size(),
                 wo.points.weights, w.bits, w.block_size, w.gptq ? "gptq" : "rtn");
    return res;
  }

  PassResult replay(ir::Model& model, const json& rec) {
    PassResult res;
    if (rec.value("already_quantized", false)) {
      res.stats["already_quantized"] = true;
      res.record = rec;
      return res;
    }
    Plan plan;
    try {
      if (rec.value("format", 0) != 1) throw ModelError("unknown record format");
      plan.opset_from = rec.at("opset").at("from").get<int64_t>();
      plan.opset_to = rec.at("opset").at("to").get<int64_t>();
      plan.ir_from = rec.at("ir_version").at("from").get<int64_t>();
      plan.ir_to = rec.at("ir_version").at("to").get<int64_t>();
      for (const auto& p : rec.at("points")) plan.points.push_back(point_from_json(p));
      plan.groups = rec.at("groups").get<std::vector<std::vector<std::string>>>();
      const std::string weight_format = rec.value("weight_format", std::string("qdq"));
      if (weight_format != "qdq" && weight_format != "matmul_nbits") throw ModelError("unknown weight_format '" + weight_format + "'");
      plan.matmul_nbits = weight_format == "matmul_nbits";
    } catch (const nlohmann::json::exception& e) {
      throw ModelError(std::string("quantize: the state's record is invalid: ") + e.what());
    } catch (const Error& e) {
      throw ModelError("quantize: the state's record is invalid: " + e.message());
    }
    if (model.opset("") != plan.opset_from || model.ir_version != plan.ir_from)
      throw ModelError("quantize: the state was recorded for a model with ai.onnx opset " + std::to_string(plan.opset_from) +
                       " and IR version " + std::to_string(plan.ir_from) + "; this one has opset " +
                       std::to_string(model.opset("")) + " and IR version " + std::to_string(model.ir_version));
    try {
      if (rec.contains("smooth_quant")) apply_smooth_record(model, rec["smooth_quant"]);  // before the points' weights
      if (rec.contains("awq")) apply_awq_record(model, rec["awq"]);
      if (rec.contains("bias_correction")) apply_bias_corrections(*model.graph, rec["bias_correction"].at("corrected"));
      apply_plan(model, plan);
    } catch (const nlohmann::json::exception& e) {
      throw ModelError(std::string("quantize: the state's bias corrections are invalid: ") + e.what());
    } catch (Error& e) {
      e.add_context("quantize: the state does not fit this model");
      throw;
    }
    int64_t counts[3] = {0, 0, 0};
    for (const auto& p : plan.points) ++counts[static_cast<int>(p.role)];
    res.modified = !plan.points.empty();
    res.stats["activations"] = counts[0];
    res.stats["weights"] = counts[1];
    res.stats["biases"] = counts[2];
    res.stats["shared_scale_groups"] = static_cast<int64_t>(plan.groups.size());
    if (rec.contains("stats") && rec["stats"].is_object()) res.stats = rec["stats"];
    res.record = rec;
    return res;
  }
};

}  // namespace

std::unique_ptr<Pass> make_pass() { return std::make_unique<QuantizePass>(); }

}  // namespace mcc::transforms::quantize
