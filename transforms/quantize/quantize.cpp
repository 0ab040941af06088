// quantize: INT8 static post-training quantization in QDQ form (QuantizeLinear/DequantizeLinear),
// the form ONNX Runtime, TensorRT and OpenVINO consume.
//
// Before:  Y = Conv(X, W, B)                                          all float32
// After:   Xq = QuantizeLinear(X_float, sx, zx);  X = DequantizeLinear(Xq, sx, zx)
//          W  = DequantizeLinear(W_quantized: int8, sw[c], 0, axis=0)
//          B  = DequantizeLinear(B_quantized: int32, sx*sw[c], 0, axis=0)
//          Y  = Conv(X, W, B)
//
// Formulas. Activations (default asymmetric uint8) from a calibrated range [lo, hi] ∋ 0:
//   s = (hi - lo) / (qmax - qmin), z = clamp(round(qmin - lo / s)); signed types (int8, int16)
//   are symmetric: s = max(|lo|, |hi|) / qmax, z = 0. Weights: symmetric int8, per output
//   channel by default (Conv axis 0, ConvTranspose axis 1, Gemm axis 1 or 0 with transB, MatMul
//   axis 1): s[c] = max|W[c]| / 127, q = clamp(round_half_even(W / s[c]), -127, 127). Bias of
//   Conv/ConvTranspose/Gemm: int32, s_b[c] = float(s_x * s_w[c]), q = round(B / s_b[c]).
// Bias overflow guard: when |q| would exceed 2^30 (headroom below 2^31 for the accumulator), the
//   weight scale of that channel (or of the tensor, per-tensor) is widened to
//   |B[c]| / (s_x * 2^30) so the bias fits, and the point's note records old and new scale. This
//   happens on nearly dead channels (tiny weights, large bias), where the wider weight scale
//   costs no accuracy; keeping the bias in float32 instead would stop runtimes from fusing the op.
// Bias correction (bias_correction=true, quantize/tune.cpp): each Conv/Gemm bias becomes
//   B - sum (Wq - W) E[x] with per-channel input means streamed during calibration; the amounts
//   are recorded (record.bias_correction) and replayed without data. Default on: it costs one
//   pass over the weights, and on ONNX Runtime YOLOX-nano weight-only int8 goes from cosine 0.9835
//   to 0.9992 (full int8: 0.878 -> 0.881, activations dominate there), MNIST top-1 stays 99.41 %,
//   MobileNetV2 logits SNR 45.3 dB.
// 16-bit activations (widen_below_db=D, default 0 = off): an input whose estimated 8-bit SNR at
//   its Conv/Gemm (quantize/tune.h) is below D dB becomes uint16/int16; its consumer's bias stays
//   float32. Off by default because YOLOX-nano needs D=45 (91 of 97 activations 16-bit, cosine
//   0.9964) to pass 0.99: the result is then W8A16, not int8, and the record's 'widened' and the
//   stats activations_16bit / layers_all_8bit say so.
// Measured sensitivity (quantize/mixed.cpp; opt-in): method=auto picks, per activation, the range
//   method among minmax/percentile/mse whose output cosine is best when that activation alone is
//   quantized (cpu Executor, first sensitivity_samples=4 calibration samples); mixed_target=C keeps
//   the activations with the largest measured cost float (their Conv keeps int8 weights and a float
//   bias) until the whole model measures mean cosine >= C; keep_float_top=K keeps exactly K float.
//   Stats activations_kept_float and layers_all_8bit, record.mixed (every loss, every k measured)
//   and skipped_tensors say what is not int8; replay needs no data. YOLOX-nano under ONNX Runtime,
//   20 held-out photos (mean / min cosine, activations float of 97, calibration wall time, 2 cores):
//   minmax 0.881 / 0.831, 0, 1.2 s; method=auto 0.917 / 0.874, 0, 46 s; minmax + mixed_target=0.995
//   0.994 / 0.990, 12, 14 s; method=auto mixed_target=0.99 0.993 / 0.989, 2, 47 s; method=auto
//   mixed_target=0.995 0.995 / 0.993, 5 (inputs of Conv_44, Conv_70, Conv_47, Conv_62, Conv_95;
//   108 of 113 layers all 8-bit), 34 s; the same with mixed_fallback=16bit (the chosen activations
//   uint16 with minmax ranges, opset 21, their biases float) 0.995 / 0.993, 10 activations 16-bit,
//   103 of 113 layers all 8-bit, 35 s. The target is met on calibration samples: set it a little
//   above the bar wanted on other data (0.99 on calibration gave 0.988 held out with 8 samples).
//   Off by default: the measure costs 10-40x the calibration time (MobileNetV2: 0.75 s -> 19 s, logits SNR
//   45.26 -> 45.24 dB; MNIST top-1 99.41 -> 99.42 %).
// Shared scales: the quantized inputs of a Concat are one group with the union of their ranges.
// Calibration (calibration.h): the float model runs over the `calib` folder sample by sample
//   with streaming statistics; methods minmax, percentile, entropy, mse.
// Selection: op_types (default Conv, ConvTranspose, Gemm, MatMul; also Add, Mul, Sub, Concat,
//   MaxPool, AveragePool, GlobalAveragePool, Resize, Reshape, Flatten, Transpose: their float
//   inputs get QDQ), exclude= (node name, output name, op type or regex; each item must match),
//   rules= ordered REGEX:action[+action] rules on node names, first match wins, each must match
//   a quantized node (exit 2 otherwise); the record lists what each rule and item matched.
// Opset: per-channel QDQ needs ai.onnx opset >= 13, per-tensor >= 10, 16-bit activations >= 21.
//   A lower opset is raised when every op in the model keeps its meaning (quantize/policy.cpp);
//   otherwise the stage refuses (exit 4) naming the op. The IR version
//   is raised with it (>= 7 for opset 13); an IR < 4 model's initializer inputs stop being
//   listed as graph inputs (they were constants).
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

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "ir/errors.h"
#include "ir/sample_data.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/mixed.h"
#include "transforms/quantize/plan.h"
#include "transforms/quantize/policy.h"
#include "transforms/quantize/select.h"
#include "transforms/quantize/tune.h"

namespace fs = std::filesystem;

namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

constexpr double kBiasLimit = 1073741824.0;  // 2^30

ir::DType parse_activation_type(const std::string& s) {
  if (s == "uint8") return ir::DType::U8;
  if (s == "int8") return ir::DType::I8;
  if (s == "uint16") return ir::DType::U16;
  return ir::DType::I16;
}

bool is_16(ir::DType d) { return d == ir::DType::U16 || d == ir::DType::I16; }
bool is_signed(ir::DType d) { return d == ir::DType::I8 || d == ir::DType::I16; }

bool graph_output(const ir::Graph& g, const ir::Value* v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

/// Float32 absolute maximum per channel along axis (axis -1: one channel).
void channel_ranges(const ir::Tensor& w, int axis, std::vector<double>& lo, std::vector<double>& hi) {
  const auto x = w.data<float>();
  int64_t inner = 1, channels = 1;
  if (axis >= 0) {
    channels = w.dims()[static_cast<size_t>(axis)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < w.rank(); ++d) inner *= w.dims()[d];
  }
  lo.assign(static_cast<size_t>(channels), 0.0);
  hi.assign(static_cast<size_t>(channels), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = axis < 0 ? 0 : static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels);
    lo[c] = std::min(lo[c], static_cast<double>(x[i]));
    hi[c] = std::max(hi[c], static_cast<double>(x[i]));
  }
}

std::string fmt_float(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
  return buf;
}

/// Activations whose estimated 8-bit SNR at a quantized Conv/Gemm is below `db` get 16 bits
/// (uint8 -> uint16, int8 -> int16; a shared-scale group widens as a whole). Returns one entry
/// per widened activation with its estimate.
json widen_activations(Selection& sel, const CalibrationResult& cal, const std::vector<std::pair<double, double>>& ranges,
                       const std::vector<bool>& ok, double db, bool symmetric_unsigned) {
  json out = json::array();
  if (db <= 0) return out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < sel.activations.size(); ++i) index[sel.activations[i].name] = i;
  std::vector<double> worst(sel.activations.size(), 1e300);
  std::vector<std::string> at(sel.activations.size());
  for (const auto& c : sel.nodes) {
    const ir::Value* x = c.node->input(0);
    if (c.slots.weight < 0 || !x) continue;
    const auto it = index.find(x->name);
    const auto m = cal.channels.find(x->name);
    if (it == index.end() || !ok[it->second] || m == cal.channels.end()) continue;
    const auto& a = sel.activations[it->second];
    if (is_16(a.settings.activation)) continue;
    float s = 1;
    int32_t z = 0;
    activation_params(ranges[it->second].first, ranges[it->second].second, a.settings.activation,
                      is_signed(a.settings.activation) || symmetric_unsigned, s, z);
    const auto snr = estimated_snr_db(*c.node, c.slots, m->second, s);
    if (snr && *snr < worst[it->second]) {
      worst[it->second] = *snr;
      at[it->second] = node_label(*c.node);
    }
  }
  std::vector<bool> widen(sel.activations.size(), false);
  for (size_t i = 0; i < worst.size(); ++i) widen[i] = worst[i] < db;
  for (size_t i = 0; i < worst.size(); ++i)  // a group widens as a whole
    if (widen[i] && sel.activations[i].group >= 0)
      for (size_t j = 0; j < worst.size(); ++j)
        if (sel.activations[j].group == sel.activations[i].group) widen[j] = true;
  for (size_t i = 0; i < worst.size(); ++i) {
    if (!widen[i]) continue;
    auto& s = sel.activations[i].settings;
    s.activation = is_signed(s.activation) ? ir::DType::I16 : ir::DType::U16;
    json e{{"tensor", sel.activations[i].name}, {"dtype", ir::dtype_name(s.activation)}};
    if (worst[i] < 1e300) e["estimated_snr_db"] = std::round(worst[i] * 100) / 100, e["at"] = at[i];
    out.push_back(e);
  }
  return out;
}

/// Bias correction (quantize/tune.h): the float32 amount subtracted from each bias, per node.
void correct_biases(const ir::Graph& g, const Selection& sel, const Plan& plan, const std::map<std::string, size_t>& weight_point,
                    const CalibrationResult& cal, json& corrected, json& skipped) {
  for (const auto& c : sel.nodes) {
    if (c.slots.weight < 0) continue;
    const ir::Value* w = c.node->input(static_cast<size_t>(c.slots.weight));
    const auto wp = weight_point.find(w->name);
    if (wp == weight_point.end()) continue;
    std::string why;
    const ir::Value* b = c.slots.bias >= 0 ? c.node->input(static_cast<size_t>(c.slots.bias)) : nullptr;
    const auto m = c.node->input(0) ? cal.channels.find(c.node->input(0)->name) : cal.channels.end();
    if (!b) why = "no float32 bias input";
    else if (b->uses.size() != 1 || graph_output(g, b)) why = "bias shared or a graph output";
    else if (m == cal.channels.end() || m->second.count == 0) why = "no calibrated input means";
    std::optional<std::vector<double>> shift;
    if (why.empty()) shift = bias_shift(*c.node, c.slots, plan.points[wp->second], m->second, why);
    if (shift && shift->size() != static_cast<size_t>(b->initializer->numel())) shift.reset(), why = "bias length differs";
    if (!shift) {
      skipped.push_back({{"node", node_label(*c.node)}, {"reason", why}});
      continue;
    }
    json vals = json::array();
    for (double d : *shift) vals.push_back(static_cast<double>(static_cast<float>(d)));
    corrected.push_back({{"tensor", b->name}, {"node", node_label(*c.node)}, {"subtract", vals}});
  }
}

/// B[c] = float(B[c] - d[c]) for each recorded correction (run and replay alike).
void apply_bias_corrections(ir::Graph& g, const json& corrected) {
  for (const auto& e : corrected) {
    const std::string name = e.at("tensor").get<std::string>();
    ir::Value* b = g.find_value(name);
    if (!b || !b->initializer || b->initializer->dtype() != ir::DType::F32)
      throw ModelError("bias correction names '" + name + "', which is not a float32 constant of the model");
    const auto& d = e.at("subtract");
    if (d.size() != static_cast<size_t>(b->initializer->numel()))
      throw ModelError("bias correction of '" + name + "' has " + std::to_string(d.size()) + " values for a bias of " +
                       std::to_string(b->initializer->numel()));
    ir::Tensor t = b->initializer->clone();
    auto v = t.mutable_data<float>();
    for (size_t k = 0; k < v.size(); ++k)
      v[k] = static_cast<float>(static_cast<double>(v[k]) - static_cast<double>(static_cast<float>(d[k].get<double>())));
    b->initializer = std::move(t);
  }
}

class QuantizePass : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo kInfo{
        "quantize",
        "INT8 static post-training quantization in QDQ form (calibrated activations, per-channel weights, int32 bias)",
        {
            {"calib", OptionType::String, "", "Calibration data folder (relative to the pipeline file's folder, or the cwd)", {}},
            {"samples", OptionType::Int, "0", "Use at most this many calibration samples (0: all)", {}},
            {"method", OptionType::String, "minmax",
             "Activation range method (auto: per activation, the one of minmax/percentile/mse whose measured output "
             "cosine is best)", {"minmax", "percentile", "entropy", "mse", "auto"}},
            {"percentile", OptionType::Float, "99.99", "Percentile kept by method=percentile, in (50, 100]", {}},
            {"per_channel", OptionType::Bool, "true", "One weight scale per output channel (else one per tensor)", {}},
            {"activation_type", OptionType::String, "uint8", "Activation type (uint8 asymmetric, int8 symmetric; 16-bit needs opset 21)",
             {"uint8", "int8", "uint16", "int16"}},
            {"weight_type", OptionType::String, "int8", "Weight type (symmetric)", {"int8"}},
            {"symmetric_activations", OptionType::Bool, "false", "Symmetric ranges for unsigned activations too", {}},
            {"op_types", OptionType::StringList, "Conv,ConvTranspose,Gemm,MatMul", "Ops to quantize", {}},
            {"exclude", OptionType::StringList, "", "Nodes kept in float: names, output names, op types or regexes", {}},
            {"rules", OptionType::StringList, "",
             "Ordered per-layer rules REGEX:action[+action], first match wins (skip, per_tensor, per_channel, "
             "uint8, int8, uint16, int16, minmax, percentile, entropy, mse)", {}},
            {"quantize_bias", OptionType::Bool, "true", "Quantize Conv/Gemm biases to int32", {}},
            {"bias_correction", OptionType::Bool, "true",
             "Correct Conv/Gemm biases by the expected output shift of weight rounding (calibrated input means)", {}},
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
        },
        {{"fp16", "calibration and QDQ scales need the float32 model; fp16 and quantize are alternatives"}}};
    return kInfo;
  }

  PassResult run(ir::Model& model, PassContext& ctx) override {
    const Options& o = ctx.options;
    const double pct = o.get_float("percentile");
    if (!(pct > 50 && pct <= 100)) throw UsageError("quantize: percentile must be in (50, 100], got " + std::to_string(pct));
    if (o.get_int("samples") < 0) throw UsageError("quantize: samples must be >= 0");
    if (ctx.replay && !ctx.replay->empty()) return replay(model, *ctx.replay);

    SelectConfig sc;
    sc.op_types = o.get_list("op_types");
    sc.defaults.per_channel = o.get_bool("per_channel");
    sc.defaults.activation = parse_activation_type(o.get_string("activation_type"));
    const bool auto_method = o.get_string("method") == "auto";
    sc.defaults.method = auto_method ? CalibMethod::MinMax : parse_calib_method(o.get_string("method"));
    const double mixed_target = o.get_float("mixed_target");
    const int64_t keep_top = o.get_int("keep_float_top");
    const int64_t sens_samples = o.get_int("sensitivity_samples");
    if (!(mixed_target >= 0 && mixed_target <= 1)) throw UsageError("quantize: mixed_target must be in [0, 1]");
    if (keep_top < 0) throw UsageError("quantize: keep_float_top must be >= 0");
    if (sens_samples < 1) throw UsageError("quantize: sensitivity_samples must be >= 1");
    if (mixed_target > 0 && keep_top > 0) throw UsageError("quantize: set mixed_target or keep_float_top, not both");
    if (o.get_string("mixed_fallback") != "float" && o.get_string("mixed_fallback") != "16bit")
      throw UsageError("quantize: mixed_fallback must be float or 16bit, got '" + o.get_string("mixed_fallback") + "'");
    const bool measured = auto_method || mixed_target > 0 || keep_top > 0;
    const bool symmetric_unsigned = o.get_bool("symmetric_activations");
    auto excludes = parse_excludes(o.get_list("exclude"));
    auto rules = parse_rules(o.get_list("rules"));
    ir::Graph& g = *model.graph;
    Selection sel = select(model, sc, excludes, rules);

    PassResult res;
    json rec;
    rec["format"] = 1;
    if (sel.already_quantized) {
      spdlog::warn("quantize: the model already holds QuantizeLinear/DequantizeLinear nodes; nothing was changed "
                   "(quantizing twice compounds error; quantize the float model instead)");
      res.stats["already_quantized"] = true;
      rec["already_quantized"] = true;
      res.record = rec;
      return res;
    }

    Plan plan;
    plan.opset_from = plan.opset_to = model.opset("");
    plan.ir_from = plan.ir_to = model.ir_version;
    const bool ir3 = model.ir_version > 0 && model.ir_version < 4;
    // Opset requirements, checked before any calibration work.
    bool per_channel_any = false, wide_any = false;
    for (const auto& c : sel.nodes) per_channel_any = per_channel_any || (c.slots.weight >= 0 && c.settings.per_channel);
    for (const auto& a : sel.activations) wide_any = wide_any || is_16(a.settings.activation);
    const double widen_db = o.get_float("widen_below_db");
    if (widen_db < 0) throw UsageError("quantize: widen_below_db must be >= 0");
    auto raise_opset = [&](bool wide) {
      const int64_t need = wide ? 21 : per_channel_any ? 13 : 10;
      if (sel.nodes.empty() || plan.opset_from >= need) return;
      const std::string why = opset_raise_blocker(g, plan.opset_from, need);
      if (!why.empty()) {
        if (wide)
          throw UnsupportedError("quantize: 16-bit activations need ai.onnx opset >= 21 (QuantizeLinear to uint16/int16) "
                                 "and the model imports opset " + std::to_string(plan.opset_from) +
                                 ", which cannot be raised: " + why + "; use 8-bit for those layers");
        throw UnsupportedError("quantize: " + std::string(per_channel_any ? "per-channel" : "per-tensor") +
                               " QDQ needs ai.onnx opset >= " + std::to_string(need) + " and the model imports opset " +
                               std::to_string(plan.opset_from) + ", which cannot be raised: " + why +
                               (per_channel_any ? "; try per_channel=false (opset 10)" : ""));
      }
      plan.opset_to = need;
      plan.ir_to = std::max<int64_t>(model.ir_version, need >= 21 ? 10 : need >= 13 ? 7 : 5);
    };
    raise_opset(wide_any);

    // Calibration.
    std::vector<std::string> watch;
    bool histograms = auto_method;
    std::string calib_dir;
    for (const auto& a : sel.activations) {
      watch.push_back(a.name);
      histograms = histograms || a.settings.method != CalibMethod::MinMax;
    }
    CalibrationResult cal;
    json calib = json::object();
    const bool bias_correction = o.get_bool("bias_correction");
    std::vector<std::string> channel_watch;
    if (bias_correction || widen_db > 0)
      for (const auto& c : sel.nodes)
        if (c.slots.weight >= 0 && c.node->input(0) &&
            std::find(channel_watch.begin(), channel_watch.end(), c.node->input(0)->name) == channel_watch.end())
          channel_watch.push_back(c.node->input(0)->name);
    if (!watch.empty()) {
      std::string dir = o.get_string("calib");
      if (dir.empty())
        throw UsageError("quantize: " + std::to_string(watch.size()) +
                         " activations need calibration data; set calib=DIR (mcc quantize --calib DIR)");
      if (fs::path(dir).is_relative() && !ctx.base_dir.empty()) dir = (fs::path(ctx.base_dir) / dir).lexically_normal().string();
      calib_dir = dir;
      CalibrationConfig cc;
      cc.data_dir = dir;
      cc.max_samples = static_cast<size_t>(o.get_int("samples"));
      cc.histograms = histograms;
      cc.threads = ctx.threads;
      cc.channel_watch = channel_watch;
      const bool tty = ::isatty(STDERR_FILENO) != 0;
      if (tty)
        cc.progress = [](size_t done, size_t total) {
          const int width = 30;
          const int fill = static_cast<int>(width * done / std::max<size_t>(total, 1));
          std::fprintf(stderr, "\rquantize: calibrating [%s%s] %zu/%zu", std::string(fill, '#').c_str(),
                       std::string(width - fill, ' ').c_str(), done, total);
          if (done == total) std::fprintf(stderr, "\n");
          std::fflush(stderr);
        };
      const auto t0 = std::chrono::steady_clock::now();
      cal = calibrate(model, watch, cc);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      spdlog::info("quantize: calibrated {} tensors over {} samples in {:.2f} s", watch.size(), cal.samples, secs);
      calib["data"] = o.get_string("calib");
      calib["samples"] = cal.samples;
      calib["files"] = cal.files;
      calib["sha256"] = cal.sha256;
      calib["method"] = o.get_string("method");
      if (histograms) calib["histogram_bins"] = 2 * TensorStats::kHalfBins;
    }

    // Activation parameters (groups share the union of their members' ranges).
    json skipped_tensors = json::array();
    std::map<std::string, size_t> act_point;
    std::vector<std::pair<double, double>> ranges(sel.activations.size());
    std::vector<bool> ok(sel.activations.size(), false);
    for (size_t i = 0; i < sel.activations.size(); ++i) {
      const auto& a = sel.activations[i];
      const auto st = cal.stats.find(a.name);
      const auto dt = cal.dtypes.find(a.name);
      if (dt != cal.dtypes.end() && dt->second != ir::DType::F32) {
        skipped_tensors.push_back({{"tensor", a.name}, {"reason", "not float32 (" + ir::dtype_name(dt->second) + ")"}});
        continue;
      }
      if (st == cal.stats.end()) {
        skipped_tensors.push_back({{"tensor", a.name}, {"reason", "never computed during calibration"}});
        spdlog::warn("quantize: no calibration range for '{}' (read by '{}'); it stays float", a.name, a.consumers[0]);
        continue;
      }
      const bool sym = is_signed(a.settings.activation) || symmetric_unsigned;
      RangeSpec rs{a.settings.method, pct, sym, is_16(a.settings.activation) ? 16 : 8};
      ranges[i] = compute_range(st->second, rs);
      ok[i] = true;
    }
    json widened = widen_activations(sel, cal, ranges, ok, widen_db, symmetric_unsigned);
    if (!widened.empty()) {
      for (size_t i = 0; i < sel.activations.size(); ++i)
        if (ok[i] && is_16(sel.activations[i].settings.activation)) {
          const auto st = cal.stats.find(sel.activations[i].name);
          const bool sym = is_signed(sel.activations[i].settings.activation) || symmetric_unsigned;
          ranges[i] = compute_range(st->second, RangeSpec{sel.activations[i].settings.method, pct, sym, 16});
        }
      raise_opset(true);
    }
    // Plan building for a choice of quantized activations and their ranges (also used by the
    // measured sensitivity search, quantize/mixed.h, on copies).
    auto build = [&](const std::vector<bool>& use, const std::vector<std::pair<double, double>>& rng, Plan& plan,
                     std::map<std::string, size_t>& act_point, std::map<std::string, size_t>& weight_point,
                     int64_t& guarded, int64_t& weights, int64_t& biases, json& skipped_weights) {
      std::vector<std::pair<double, double>> group_range(sel.groups.size(), {0.0, 0.0});
      for (size_t i = 0; i < sel.activations.size(); ++i)
        if (use[i] && sel.activations[i].group >= 0) {
          auto& gr = group_range[static_cast<size_t>(sel.activations[i].group)];
          gr.first = std::min(gr.first, rng[i].first);
          gr.second = std::max(gr.second, rng[i].second);
        }
      for (size_t i = 0; i < sel.activations.size(); ++i) {
        if (!use[i]) continue;
        const auto& a = sel.activations[i];
        QPoint p;
        p.tensor = a.name;
        p.role = Role::Activation;
        p.dtype = a.settings.activation;
        p.lo = {rng[i].first};
        p.hi = {rng[i].second};
        auto r = a.group >= 0 ? group_range[static_cast<size_t>(a.group)] : rng[i];
        float s = 1;
        int32_t z = 0;
        activation_params(r.first, r.second, p.dtype, is_signed(p.dtype) || symmetric_unsigned, s, z);
        p.scale = {s};
        p.zero_point = {z};
        p.method = calib_method_name(a.settings.method);
        p.consumers = a.consumers;
        p.group = a.group;
        act_point[a.name] = plan.points.size();
        plan.points.push_back(std::move(p));
      }

      // Weights and biases.
      std::map<const ir::Value*, std::vector<const Candidate*>> weight_users;
      for (const auto& c : sel.nodes)
        if (c.slots.weight >= 0) weight_users[c.node->input(static_cast<size_t>(c.slots.weight))].push_back(&c);
      const bool quantize_bias = o.get_bool("quantize_bias");
      for (const auto& c : sel.nodes) {
        if (c.slots.weight < 0) continue;
        const ir::Value* w = c.node->input(static_cast<size_t>(c.slots.weight));
        const int axis = c.settings.per_channel ? c.slots.weight_axis : -1;
        std::string why;
        if (graph_output(g, w)) why = "it is a graph output";
        else if (w->is_graph_input && !ir3) why = "it is a graph input (overridable initializer)";
        else {
          // Every use must be this weight slot of a quantized node with the same axis.
          size_t expected = 0;
          for (const Candidate* u : weight_users[w]) {
            expected += static_cast<size_t>(std::count(u->node->inputs.begin(), u->node->inputs.end(), w));
            if ((u->settings.per_channel ? u->slots.weight_axis : -1) != axis) why = "shared by nodes quantized differently";
          }
          if (w->uses.size() != expected && why.empty()) why = "also read by nodes that are not quantized";
        }
        if (!why.empty()) {
          if (!weight_point.count(w->name)) skipped_weights.push_back({{"tensor", w->name}, {"reason", why}});
          continue;
        }
        if (!weight_point.count(w->name)) {
          QPoint p;
          p.tensor = w->name;
          p.role = Role::Weight;
          p.dtype = ir::DType::I8;
          p.axis = axis;
          channel_ranges(*w->initializer, axis, p.lo, p.hi);
          for (size_t k = 0; k < p.lo.size(); ++k) {
            const double a = std::max(-p.lo[k], p.hi[k]);
            const float s = static_cast<float>(a / 127.0);
            p.scale.push_back(s >= 1e-30f ? s : 1.0f);
            p.zero_point.push_back(0);
          }
          p.method = "minmax";
          weight_point[w->name] = plan.points.size();
          plan.points.push_back(std::move(p));
          ++weights;
        }
        // Bias: needs the quantized input's scale and this weight's scales.
        if (!quantize_bias || c.slots.bias < 0) continue;
        const ir::Value* b = c.node->input(static_cast<size_t>(c.slots.bias));
        const ir::Value* x = c.node->input(0);
        const auto xp = x ? act_point.find(x->name) : act_point.end();
        std::string bwhy;
        if (xp == act_point.end()) bwhy = "its input is not quantized";
        else if (b->uses.size() != 1) bwhy = "shared by several nodes";
        else if (graph_output(g, b)) bwhy = "it is a graph output";
        else if (b->is_graph_input && !ir3) bwhy = "it is a graph input (overridable initializer)";
        if (!bwhy.empty()) {
          skipped_weights.push_back({{"tensor", b->name}, {"reason", bwhy}});
          continue;
        }
        const float sx = plan.points[xp->second].scale[0];
        QPoint& wp = plan.points[weight_point[w->name]];
        const auto bv = b->initializer->data<float>();
        const int div = axis < 0 ? 1 : (c.slots.bias_channel_div > 1 ? c.slots.bias_channel_div : static_cast<int>(wp.scale.size()));
        if (axis >= 0 && (bv.size() % static_cast<size_t>(div) != 0 || static_cast<size_t>(div) != wp.scale.size())) {
          skipped_weights.push_back({{"tensor", b->name}, {"reason", "bias length does not match the weight's channels"}});
          continue;
        }
        if (is_16(plan.points[xp->second].dtype)) {
          // Measured: an int32 bias on a 16-bit input lets ONNX Runtime 1.30 fuse the Conv into an
          // integer kernel whose uint16 x int8 accumulation loses accuracy (YOLOX-nano, all inputs
          // uint16: output cosine 0.899 with int32 biases, 0.999 with float32 biases).
          skipped_weights.push_back({{"tensor", b->name}, {"reason", "its input is 16-bit (bias kept float32)"}});
          continue;
        }
        // Overflow guard: widen the weight scale of a channel whose bias would not fit in 2^30.
        std::string note;
        for (size_t k = 0; k < bv.size(); ++k) {
          const size_t wc = axis < 0 ? 0 : k % static_cast<size_t>(div);
          const double need_scale = std::fabs(static_cast<double>(bv[k])) / (static_cast<double>(sx) * kBiasLimit);
          if (static_cast<double>(sx * wp.scale[wc]) >= need_scale) continue;
          float ns = static_cast<float>(need_scale / static_cast<double>(sx));
          while (static_cast<double>(sx * ns) < need_scale) ns = std::nextafter(ns, INFINITY);
          note += (note.empty() ? "" : "; ") + std::string("channel ") + std::to_string(wc) + " weight scale widened from " +
                  fmt_float(wp.scale[wc]) + " to " + fmt_float(ns) + " so bias '" + b->name + "' fits int32";
          wp.scale[wc] = ns;
          ++guarded;
        }
        if (!note.empty()) wp.note += (wp.note.empty() ? "" : "; ") + note;
        QPoint p;
        p.tensor = b->name;
        p.role = Role::Bias;
        p.dtype = ir::DType::I32;
        p.axis = axis < 0 ? -1 : 0;
        const size_t n = axis < 0 ? 1 : bv.size();
        for (size_t k = 0; k < n; ++k) {
          p.scale.push_back(sx * wp.scale[axis < 0 ? 0 : k % static_cast<size_t>(div)]);
          p.zero_point.push_back(0);
        }
        p.method = "derived: input scale x weight scale";
        p.consumers = {node_label(*c.node)};
        p.note = note;
        plan.points.push_back(std::move(p));
        ++biases;
      }
    };
    std::map<std::string, size_t> weight_point;
    int64_t guarded = 0, weights = 0, biases = 0;
    json skipped_weights = json::array();
    json mixed = nullptr;
    int64_t kept_float = 0;
    if (measured && !calib_dir.empty()) {
      const auto t0 = std::chrono::steady_clock::now();
      // Bias corrections of the all-8-bit plan apply to every measured copy.
      json corr0 = json::array(), skip0 = json::array();
      if (bias_correction) {
        Plan p0 = plan;
        std::map<std::string, size_t> a0, w0;
        int64_t g0 = 0, n0 = 0, b0 = 0;
        json s0 = json::array();
        build(ok, ranges, p0, a0, w0, g0, n0, b0, s0);
        correct_biases(g, sel, p0, w0, cal, corr0, skip0);
      }
      std::vector<std::string> dirs = ir::list_sample_dirs(calib_dir);
      const size_t cap = std::min<size_t>(static_cast<size_t>(sens_samples), static_cast<size_t>(cal.samples));
      if (dirs.size() > cap) dirs.resize(cap);
      OutputProbe probe(model, dirs, ctx.threads, corr0);
      std::vector<std::vector<size_t>> units;
      std::map<int, size_t> group_unit;
      std::vector<std::vector<RangeChoice>> choices(sel.activations.size());
      std::vector<std::string> names;
      for (size_t i = 0; i < sel.activations.size(); ++i) {
        const auto& a = sel.activations[i];
        names.push_back(a.name);
        if (!ok[i]) continue;
        if (a.group < 0) units.push_back({i});
        else if (const auto it = group_unit.find(a.group); it != group_unit.end()) units[it->second].push_back(i);
        else group_unit[a.group] = units.size(), units.push_back({i});
        const bool sym = is_signed(a.settings.activation) || symmetric_unsigned;
        const int bits = is_16(a.settings.activation) ? 16 : 8;
        if (!auto_method) {
          choices[i].push_back({calib_method_name(a.settings.method), ranges[i]});
          continue;
        }
        const auto& st = cal.stats.at(a.name);
        for (CalibMethod m : {CalibMethod::MinMax, CalibMethod::Percentile, CalibMethod::Mse})
          choices[i].push_back({calib_method_name(m), compute_range(st, RangeSpec{m, pct, sym, bits})});
      }
      MixedConfig mc;
      mc.target = mixed_target;
      mc.keep_top = keep_top;
      // 16-bit fallback: a unit left out of 8 bits gets 16 bits with its minmax range.
      const bool wide_fallback = o.get_string("mixed_fallback") == "16bit" && (mixed_target > 0 || keep_top > 0);
      const auto opset_before = std::make_pair(plan.opset_to, plan.ir_to);
      if (wide_fallback) raise_opset(true);
      auto widen_to = [&](size_t i) {
        auto& st = sel.activations[i].settings;
        st.activation = is_signed(st.activation) ? ir::DType::I16 : ir::DType::U16;
        return compute_range(cal.stats.at(sel.activations[i].name),
                             RangeSpec{CalibMethod::MinMax, pct, is_signed(st.activation) || symmetric_unsigned, 16});
      };
      auto plan_for = [&](const std::vector<bool>& use, const std::vector<std::pair<double, double>>& rng, bool fallback) {
        Plan p = plan;
        std::map<std::string, size_t> a1, w1;
        int64_t g1 = 0, n1 = 0, b1 = 0;
        json s1 = json::array();
        std::vector<bool> use2 = use;
        std::vector<std::pair<double, double>> rng2 = rng;
        const auto saved = sel.activations;
        if (wide_fallback && fallback)
          for (size_t i = 0; i < use.size(); ++i)
            if (ok[i] && !use[i]) use2[i] = true, rng2[i] = widen_to(i);
        build(use2, rng2, p, a1, w1, g1, n1, b1, s1);
        sel.activations = saved;
        return p;
      };
      MixedOutcome mo = mixed_search(probe, units, choices, ok, names, plan_for, mc);
      for (size_t i = 0; i < sel.activations.size(); ++i) {
        if (!ok[i]) continue;
        ranges[i] = mo.range[i];
        sel.activations[i].settings.method = parse_calib_method(mo.method[i]);
        if (!mo.use[i] && wide_fallback) {
          ranges[i] = widen_to(i);
          widened.push_back({{"tensor", sel.activations[i].name}, {"dtype", ir::dtype_name(sel.activations[i].settings.activation)},
                             {"reason", "largest measured 8-bit cost"}});
        } else if (!mo.use[i]) {
          ok[i] = false;
          skipped_tensors.push_back({{"tensor", sel.activations[i].name}, {"reason", "kept float: largest measured 8-bit cost"}});
        }
      }
      kept_float = wide_fallback ? 0 : mo.kept_float;
      if (wide_fallback && mo.kept_float == 0) plan.opset_to = opset_before.first, plan.ir_to = opset_before.second;
      mixed = mo.record;
      mixed["fallback"] = wide_fallback ? "16bit" : "float";
      spdlog::info("quantize: measured sensitivities of {} activations ({} model runs over {} samples) in {:.2f} s; {} "
                   "left out of 8 bits ({}), measured cosine {:.5f}", units.size(), probe.evaluations(), probe.samples(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), mo.kept_float,
                   wide_fallback ? "16-bit" : "float", mo.cosine);
    }
    build(ok, ranges, plan, act_point, weight_point, guarded, weights, biases, skipped_weights);
    plan.groups = sel.groups;
    json corrections = json::array(), corr_skipped = json::array();
    if (bias_correction) correct_biases(g, sel, plan, weight_point, cal, corrections, corr_skipped);
    apply_bias_corrections(g, corrections);
    // Layer census before the graph changes (a graph input's dequantized value gets a new name).
    int64_t conv_total = 0, conv_int8 = 0;
    for (const ir::Node* n : g.nodes()) conv_total += n->op_type == "Conv" || n->op_type == "Gemm" || n->op_type == "MatMul";
    for (const auto& c : sel.nodes) {
      if (c.slots.weight < 0 || !weight_point.count(c.node->input(static_cast<size_t>(c.slots.weight))->name)) continue;
      bool all8 = true;
      for (int a : c.slots.activations) {
        const ir::Value* x = c.node->input(static_cast<size_t>(a));
        const auto it = x ? act_point.find(x->name) : act_point.end();
        all8 = all8 && it != act_point.end() && !is_16(plan.points[it->second].dtype);
      }
      conv_int8 += all8;
    }
    // Points whose node's activation could not be calibrated still quantize weights (weight-only).
    apply_plan(model, plan);

    res.modified = !plan.points.empty();
    res.stats["nodes_quantized"] = static_cast<int64_t>(sel.nodes.size());
    res.stats["activations"] = static_cast<int64_t>(act_point.size());
    res.stats["weights"] = weights;
    res.stats["biases"] = biases;
    res.stats["shared_scale_groups"] = static_cast<int64_t>(plan.groups.size());
    res.stats["bias_scale_guards"] = guarded;
    res.stats["nodes_skipped"] = static_cast<int64_t>(sel.skipped.size());
    res.stats["calibration_samples"] = cal.samples;
    res.stats["bias_corrections"] = static_cast<int64_t>(corrections.size());
    int64_t wide_acts = 0;
    for (const auto& p : plan.points) wide_acts += p.role == Role::Activation && is_16(p.dtype);
    res.stats["activations_16bit"] = wide_acts;
    res.stats["activations_kept_float"] = kept_float;
    res.stats["layers_with_weights"] = conv_total;
    res.stats["layers_all_8bit"] = conv_int8;

    rec["opset"] = {{"from", plan.opset_from}, {"to", plan.opset_to}};
    rec["ir_version"] = {{"from", plan.ir_from}, {"to", plan.ir_to}};
    rec["calibration"] = calib;
    json pts = json::array();
    for (const auto& p : plan.points) pts.push_back(point_to_json(p));
    rec["points"] = pts;
    rec["groups"] = plan.groups;
    json rj = json::array();
    for (const auto& r : rules) rj.push_back({{"rule", r.text}, {"matched", r.matched}});
    rec["rules"] = rj;
    json ej = json::array();
    for (const auto& x : excludes) ej.push_back({{"item", x.text}, {"matched", x.matched}});
    rec["exclude"] = ej;
    rec["skipped_nodes"] = sel.skipped;
    skipped_tensors.insert(skipped_tensors.end(), skipped_weights.begin(), skipped_weights.end());
    rec["skipped_tensors"] = skipped_tensors;
    rec["bias_correction"] = {{"enabled", bias_correction}, {"corrected", corrections}, {"skipped", corr_skipped}};
    rec["widened"] = widened;
    if (!mixed.is_null()) rec["mixed"] = mixed;
    rec["stats"] = res.stats;
    res.record = rec;
    spdlog::info("quantize: {} nodes, {} activations, {} weights, {} biases, {} shared-scale groups", sel.nodes.size(),
                 act_point.size(), weights, biases, plan.groups.size());
    return res;
  }

 private:
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
