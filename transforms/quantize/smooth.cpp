// SmoothQuant for the quantize stage: eligible LayerNormalizations, their outputs' per-channel
// maxima, the scales and their folding into gamma/beta and the readers' weights (see
// quantize/smooth.h).
#include "transforms/quantize/smooth.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/points.h"
#include "transforms/quantize/smooth_sites.h"


namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

constexpr double kMinScale = 1e-5, kMaxScale = 1e5;

/// max |W[j, :]| over every reader's weight, per input channel j.
std::vector<double> weight_row_max(const ScaleSite& s) {
  std::vector<double> m(static_cast<size_t>(s.channels), 0.0);
  for_each_weight(s, [&](size_t, size_t j, size_t, float w) {
    const double a = std::fabs(static_cast<double>(w));
    if (std::isfinite(a)) m[j] = std::max(m[j], a);
    else m[j] = INFINITY;  // guarded below: s = 1
  });
  return m;
}

/// Per-channel running max |x| of the tapped tensors (last axis); non-finite values mark the channel.
struct ChannelMax {
  std::vector<double> max;
  std::vector<bool> nonfinite;
  std::vector<double> sumsq;  // per channel, over every row seen (for the noise estimate)
  int64_t rows = 0;
  bool mismatch = false;  // a tensor whose last axis is not `channels`
  void add(const ir::Tensor& t) {
    if (t.dtype() != ir::DType::F32 || t.rank() < 1 || t.dims().back() != static_cast<int64_t>(max.size())) {
      mismatch = true;
      return;
    }
    const auto x = t.data<float>();
    const size_t c = max.size();
    if (sumsq.size() != c) sumsq.assign(c, 0.0);
    for (size_t i = 0; i < x.size(); ++i) {
      const float a = std::fabs(x[i]);
      if (!std::isfinite(a)) {
        nonfinite[i % c] = true;
        continue;
      }
      if (a > max[i % c]) max[i % c] = a;
      sumsq[i % c] += static_cast<double>(a) * a;
    }
    rows += c ? static_cast<int64_t>(x.size() / c) : 0;
  }
};

/// Estimated int8 output noise power of a site's readers with input scales `s` (all 1: not
/// smoothed): the per-tensor uint8 activation step over [-A, A], A = max_j max|x_j| / s_j, spread
/// through every weight row s_j W_j, plus each output column's int8 weight step max_j |s_j W_jn| /
/// 127 spread through E[(x_j / s_j)^2]. Uniform rounding noise (step^2 / 12) throughout.
double int8_noise(const ScaleSite& site, const ChannelMax& m, const std::vector<float>& s) {
  const size_t K = s.size();
  double A = 0, input_power = 0;
  for (size_t j = 0; j < K; ++j) {
    A = std::max(A, m.max[j] / s[j]);
    if (m.rows > 0) input_power += m.sumsq[j] / static_cast<double>(m.rows) / (static_cast<double>(s[j]) * s[j]);
  }
  const double act_step = 2 * A / 255;
  std::vector<std::vector<double>> col_max;  // per distinct weight, per output column: max |s_j W_jn|
  double scaled_power = 0;                   // sum over weights, j, n of (s_j W_jn)^2
  for_each_weight(site, [&](size_t index, size_t j, size_t n, float w) {
    if (col_max.size() <= index) col_max.resize(index + 1);
    if (col_max[index].size() <= n) col_max[index].resize(n + 1, 0.0);
    const double a = std::fabs(static_cast<double>(w) * s[j]);
    if (!std::isfinite(a)) return;
    col_max[index][n] = std::max(col_max[index][n], a);
    scaled_power += a * a;
  });
  double weight_steps = 0;
  for (const auto& cols : col_max)
    for (double c : cols) weight_steps += (c / 127) * (c / 127);
  return act_step * act_step / 12 * scaled_power + weight_steps / 12 * input_power;
}

float smoothing_scale(double act, double wt, double alpha) {
  if (!(act > 0) || !(wt > 0) || !std::isfinite(act) || !std::isfinite(wt)) return 1.0f;
  const double s = std::pow(act, alpha) / std::pow(wt, 1.0 - alpha);
  if (!std::isfinite(s)) return 1.0f;
  return static_cast<float>(std::clamp(s, kMinScale, kMaxScale));
}

}  // namespace

Smoothed smooth_quant(ir::Model& model, const Selection& sel, const Config& cfg, const PassContext& ctx) {
  Smoothed out;
  if (cfg.smooth_alpha <= 0) return out;
  out.enabled = true;
  json skipped = json::array();
  std::vector<ScaleSite> sites = find_layer_norm_sites(model, sel, skipped);
  if (cfg.smooth_insert) {
    std::vector<ScaleSite> more = find_activation_sites(model, sel, skipped, false);
    sites.insert(sites.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }

  std::map<std::string, ChannelMax> maxima;  // by smoothed value name
  if (!sites.empty()) {
    CalibrationConfig cc = calibration_config(cfg, ctx, "smooth_quant needs calibration data");
    for (const ScaleSite& s : sites) {
      const std::string& y = s.x->name;
      cc.tap_watch.push_back(y);
      maxima[y] = ChannelMax{std::vector<double>(static_cast<size_t>(s.channels), 0.0),
                             std::vector<bool>(static_cast<size_t>(s.channels), false),
                             std::vector<double>(static_cast<size_t>(s.channels), 0.0), 0, false};
    }
    cc.tap = [&](const std::string& name, const ir::Tensor& t) {
      if (const auto it = maxima.find(name); it != maxima.end()) it->second.add(t);
    };
    const CalibrationResult r = calibrate(model, {}, cc);
    spdlog::info("quantize: smooth_quant: per-channel maxima of {} MatMul/Gemm inputs over {} samples", sites.size(), r.samples);
  }

  json layers = json::array();
  for (const ScaleSite& s : sites) {
    const ChannelMax& m = maxima.at(s.x->name);
    if (m.mismatch) {
      const std::string why = "its last axis was not " + std::to_string(s.channels) + " float32 channels";
      skip_site(skipped, s, why);
      continue;
    }
    const std::vector<double> wmax = weight_row_max(s);
    auto scales_for = [&](double alpha) {
      std::vector<float> sc(static_cast<size_t>(s.channels));
      for (size_t j = 0; j < sc.size(); ++j) sc[j] = m.nonfinite[j] ? 1.0f : smoothing_scale(m.max[j], wmax[j], alpha);
      return sc;
    };
    // alpha_search: per site, the strength among ALPHA and 0.3, 0.4, ..., 0.9 with the least
    // estimated int8 output noise (the first of equals).
    double alpha = cfg.smooth_alpha;
    std::vector<float> scales = scales_for(alpha);
    double noise_smoothed = int8_noise(s, m, scales);
    if (cfg.smooth_alpha_search)
      for (int k = 3; k <= 9; ++k) {
        const std::vector<float> sc = scales_for(k / 10.0);
        if (const double n = int8_noise(s, m, sc); n < noise_smoothed) {
          alpha = k / 10.0;
          scales = sc;
          noise_smoothed = n;
        }
      }
    double before = 0, after = 0;
    for (size_t j = 0; j < scales.size(); ++j) {
      before = std::max(before, m.max[j]);
      after = std::max(after, m.max[j] / scales[j]);
    }
    // Smoothed only where it lowers the estimated int8 output noise of the readers.
    const double noise_plain = int8_noise(s, m, std::vector<float>(scales.size(), 1.0f));
    if (!(noise_smoothed < noise_plain)) {
      const std::string why = "smoothing would not lower the estimated int8 output noise (" + std::to_string(noise_smoothed) +
                              " vs " + std::to_string(noise_plain) + ")";
      skip_site(skipped, s, why);
      continue;
    }
    json layer = site_record(s);
    if (cfg.smooth_alpha_search) layer["alpha"] = alpha;
    layer["readers"] = node_labels(s.readers);
    layer["float_readers"] = node_labels(s.float_readers);
    layer["activation_max"] = static_cast<double>(static_cast<float>(before));
    layer["smoothed_max"] = static_cast<double>(static_cast<float>(after));
    json sj = json::array();
    for (float f : scales) sj.push_back(static_cast<double>(f));
    layer["scales"] = sj;
    apply_scale_site(*model.graph, s, scales, layer);
    layers.push_back(layer);
    out.readers += static_cast<int64_t>(s.readers.size());
    if (!s.ln) {
      ++out.muls;
      continue;
    }
    if (!s.float_readers.empty()) ++out.float_copies;
    ++out.layers;
  }
  out.record["alpha"] = cfg.smooth_alpha;
  out.record["layers"] = layers;
  out.record["skipped"] = skipped;
  spdlog::info("quantize: smooth_quant={}: {} LayerNormalizations and {} inserted Muls smoothed into {} MatMul/Gemm "
               "weights, {} left as they are", cfg.smooth_alpha, out.layers, out.muls, out.readers, skipped.size());
  return out;
}

Smoothed apply_smooth_record(ir::Model& model, const json& rec) {
  Smoothed out;
  out.enabled = true;
  out.record = rec;
  const ReplayedSites r = replay_scale_sites(model, rec, "smooth_quant");
  out.layers = r.layers;
  out.muls = r.muls;
  out.readers = r.readers;
  out.float_copies = r.float_copies;
  return out;
}

void add_smooth_stats(json& stats, const Smoothed& s) {
  if (!s.enabled) return;
  stats["smooth_quant_layers"] = s.layers;
  if (s.muls) stats["smooth_quant_muls"] = s.muls;
  stats["smooth_quant_readers"] = s.readers;
  stats["smooth_quant_float_copies"] = s.float_copies;
}

}  // namespace mcc::transforms::quantize
