// AWQ scales for weight-only quantization: activation statistics, the per-site strength search by
// quantized output error, and the record (see quantize/awq.h).
#include "transforms/quantize/awq.h"

#include <spdlog/spdlog.h>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ir/errors.h"
#include "ir/free_memory.h"
#include "transforms/common/base64.h"
#include "transforms/quantize/awq_clip.h"
#include "transforms/quantize/block_quant.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/smooth_sites.h"
#include "transforms/quantize/weight_only.h"

namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;
using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int64_t kMaxRows = 512;  // calibration rows per site the error is measured on
constexpr double kMinScale = 1e-4, kMaxScale = 1e4;

/// Per-channel mean |x| over every row, and a uniform sample of at most kMaxRows rows (reservoir
/// sampling with a fixed-seed splitmix64, so the same taps in the same order give the same rows).
struct SiteStats {
  explicit SiteStats(int64_t k) : abs_sum(static_cast<size_t>(k), 0.0), rows(kMaxRows, k) {}
  std::vector<double> abs_sum;
  RowMajorF rows;
  int64_t seen = 0;
  bool mismatch = false;     // a tensor whose last axis is not the site's channels
  bool nonfinite = false;    // a NaN or infinity in the activation
  uint64_t rng = 0x9e3779b97f4a7c15ULL;

  uint64_t next() {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  void add(const ir::Tensor& t) {
    const int64_t k = static_cast<int64_t>(abs_sum.size());
    if (t.dtype() != ir::DType::F32 || t.rank() < 1 || t.dims().back() != k) {
      mismatch = true;
      return;
    }
    const auto x = t.data<float>();
    const int64_t n = k ? static_cast<int64_t>(x.size()) / k : 0;
    for (int64_t r = 0; r < n; ++r, ++seen) {
      const float* row = x.data() + r * k;
      for (int64_t j = 0; j < k; ++j) {
        if (!std::isfinite(row[j])) nonfinite = true;
        else abs_sum[static_cast<size_t>(j)] += std::fabs(static_cast<double>(row[j]));
      }
      int64_t slot = seen;
      if (seen >= kMaxRows) {
        slot = static_cast<int64_t>(next() % static_cast<uint64_t>(seen + 1));
        if (slot >= kMaxRows) continue;
      }
      rows.row(slot) = Eigen::Map<const Eigen::RowVectorXf>(row, k);
    }
  }
  int64_t sampled() const { return std::min(seen, kMaxRows); }
};

/// The site's distinct reader weights as [K, N] matrices: views of the initializers, or for a
/// transB Gemm's [N, K] weight a transposed copy.
struct ReaderWeights {
  std::vector<RowMajorF> transposed;  // storage of the copies
  std::vector<Eigen::Map<const RowMajorF>> views;
};

ReaderWeights reader_weights(const ScaleSite& s) {
  ReaderWeights out;
  std::vector<const ir::Node*> distinct;
  std::set<const ir::Value*> seen;
  for (const ir::Node* r : s.readers)
    if (seen.insert(r->input(1)).second) distinct.push_back(r);
  out.transposed.reserve(distinct.size());  // no reallocation: the views point into it
  for (const ir::Node* r : distinct) {
    const ir::Tensor& w = *r->input(1)->initializer;
    const Eigen::Map<const RowMajorF> m(w.data<float>().data(), w.dims()[0], w.dims()[1]);
    if (!transposed_weight(*r)) {
      out.views.push_back(m);
      continue;
    }
    out.transposed.push_back(m.transpose());
    const RowMajorF& t = out.transposed.back();
    out.views.emplace_back(t.data(), t.rows(), t.cols());
  }
  return out;
}

/// Columns per chunk of quantized_error and of the clip search: a wide weight (an LM head
/// [576, 49152]) is scaled, quantized and compared a chunk at a time instead of in whole-matrix
/// copies.
constexpr int64_t kErrorColumns = 2048;

/// Squared output error on the sampled rows X of the readers' weights scaled by s, quantized, and
/// scaled back: sum over weights of ||X (W - diag(1/s) Q(diag(s) W))||^2.
double quantized_error(const RowMajorF& X, const std::vector<Eigen::Map<const RowMajorF>>& weights,
                       const std::vector<float>& s, const BlockFormat& f) {
  double err = 0;
  for (const auto& W : weights) {
    const int64_t K = W.rows(), N = W.cols(), blocks = (K + f.block_size - 1) / f.block_size;
    for (int64_t n0 = 0; n0 < N; n0 += kErrorColumns) {
      const int64_t cols = std::min(kErrorColumns, N - n0);
      RowMajorF scaled = W.middleCols(n0, cols);
      for (int64_t j = 0; j < K; ++j) scaled.row(j) *= s[static_cast<size_t>(j)];
      RowMajorF D(K, cols);
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t k0 = b * f.block_size, rows = std::min(f.block_size, K - k0);
        for (int64_t c = 0; c < cols; ++c) {
          const BlockParams p = block_params(&scaled(k0, c), rows, cols, f);
          for (int64_t j = k0; j < k0 + rows; ++j) {
            const float dq = static_cast<float>(block_code(scaled(j, c), p, f) - p.zero_point) * p.scale;
            D(j, c) = W(j, n0 + c) - dq * (1.0f / s[static_cast<size_t>(j)]);
          }
        }
      }
      const RowMajorF E = X * D;
      err += static_cast<double>(E.squaredNorm());
    }
  }
  return err;
}

/// s[j] = mean|x_j|^alpha normalized by sqrt(max * min), clamped; all 1 for alpha = 0.
std::vector<float> awq_scales(const std::vector<double>& mean_abs, double alpha) {
  std::vector<double> s(mean_abs.size(), 1.0);
  if (alpha > 0) {
    for (size_t j = 0; j < s.size(); ++j) s[j] = std::pow(std::max(mean_abs[j], 1e-8), alpha);
    const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
    const double norm = std::sqrt(*lo * *hi);
    for (double& v : s) v = std::clamp(v / norm, kMinScale, kMaxScale);
  }
  return std::vector<float>(s.begin(), s.end());
}

/// What the search found for one site.
struct SiteChoice {
  std::string refusal;  // "" = scale it
  double alpha = 0, plain = 0, error = 0;
  std::vector<float> scales;
  std::vector<std::vector<uint8_t>> clips;  // per distinct reader weight (reader_weights order); empty: no clip
};

/// The strength with the least quantized output error on the site's sampled rows.
SiteChoice search_site(const ScaleSite& s, const SiteStats& st, const BlockFormat& f, int grid, bool clip) {
  SiteChoice c;
  if (st.mismatch || st.nonfinite || st.seen == 0) {
    c.refusal = st.mismatch ? "its last axis was not " + std::to_string(s.channels) + " float32 channels"
                : st.nonfinite ? "it held NaN or infinite values"
                               : "it was never produced on the calibration samples";
    return c;
  }
  std::vector<double> mean_abs(st.abs_sum.size());
  for (size_t j = 0; j < mean_abs.size(); ++j) mean_abs[j] = st.abs_sum[j] / static_cast<double>(st.seen);
  const RowMajorF X = st.rows.topRows(st.sampled());
  const ReaderWeights readers = reader_weights(s);
  const auto& weights = readers.views;
  c.plain = c.error = quantized_error(X, weights, awq_scales(mean_abs, 0), f);
  for (int k = 1; k < grid; ++k) {
    const double alpha = static_cast<double>(k) / grid;
    if (const double e = quantized_error(X, weights, awq_scales(mean_abs, alpha), f); e < c.error) {
      c.error = e;
      c.alpha = alpha;
    }
  }
  if (c.alpha == 0) {
    c.refusal = "no scaling lowers the quantized output error (" + std::to_string(c.plain) + ")";
    return c;
  }
  c.scales = awq_scales(mean_abs, c.alpha);
  if (clip) {
    RowMajorF Xs = X;  // X / s
    for (int64_t j = 0; j < Xs.cols(); ++j) Xs.col(j) /= c.scales[static_cast<size_t>(j)];
    for (const auto& W : weights) {
      // A band of columns at a time (each column's clip is its own), as quantized_error does.
      const int64_t K = W.rows(), N = W.cols(), blocks = (K + f.block_size - 1) / f.block_size;
      std::vector<uint8_t> steps(static_cast<size_t>(blocks * N));
      for (int64_t n0 = 0; n0 < N; n0 += kErrorColumns) {
        const int64_t cols = std::min(kErrorColumns, N - n0);
        RowMajorF Ws = W.middleCols(n0, cols);  // diag(s) W
        for (int64_t j = 0; j < K; ++j) Ws.row(j) *= c.scales[static_cast<size_t>(j)];
        const std::vector<uint8_t> band = search_clip(Ws, Xs, f);
        for (int64_t b = 0; b < blocks; ++b)
          std::copy_n(band.begin() + b * cols, cols, steps.begin() + b * N + n0);
      }
      c.clips.push_back(std::move(steps));
    }
  }
  return c;
}

/// The distinct reader weights of `s`, in reader order (reader_weights' order).
std::vector<ir::Value*> distinct_weights(const ScaleSite& s) {
  std::vector<ir::Value*> out;
  for (ir::Node* r : s.readers)
    if (std::find(out.begin(), out.end(), r->input(1)) == out.end()) out.push_back(r->input(1));
  return out;
}

/// Clamps each reader weight of `s` to its clip steps (weights already scaled); records
/// {weight, steps (base64)} for each weight with a clipped block and returns the blocks clipped.
int64_t apply_clips(const ScaleSite& s, const std::vector<std::vector<uint8_t>>& clips, int64_t block_size, json& rec) {
  const std::vector<ir::Value*> weights = distinct_weights(s);
  int64_t clipped = 0;
  for (size_t i = 0; i < weights.size() && i < clips.size(); ++i) {
    const int64_t n = std::count_if(clips[i].begin(), clips[i].end(), [](uint8_t v) { return v != 0; });
    if (n == 0) continue;
    ir::Tensor t = weights[i]->initializer->clone();
    apply_clip(t.mutable_data<float>().data(), t.dims()[0], t.dims()[1], clips[i], block_size);
    weights[i]->initializer = std::move(t);
    rec.push_back({{"weight", weights[i]->name},
                   {"steps", base64_encode(std::string(clips[i].begin(), clips[i].end()))}});
    clipped += n;
  }
  return clipped;
}

}  // namespace

AwqResult awq_scale(ir::Model& model, const Selection& sel, const Config& cfg, const PassContext& ctx) {
  AwqResult out;
  if (!cfg.awq) return out;
  out.enabled = true;
  json skipped = json::array();
  std::vector<ScaleSite> sites = find_layer_norm_sites(model, sel, skipped);
  std::vector<ScaleSite> more = find_activation_sites(model, sel, skipped, true);
  sites.insert(sites.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));

  std::map<std::string, SiteStats> stats;  // by site activation name
  json calibration = json::object();
  if (!sites.empty()) {
    CalibrationConfig cc = calibration_config(cfg, ctx, "awq needs calibration data for the inputs of the weight-only layers");
    cc.stop_after_watched = true;  // an LM head's input is the last site: its product is not needed
    for (const ScaleSite& s : sites) {
      cc.tap_watch.push_back(s.x->name);
      stats.emplace(s.x->name, SiteStats(s.channels));
    }
    cc.tap = [&](const std::string& name, const ir::Tensor& t) {
      if (const auto it = stats.find(name); it != stats.end()) it->second.add(t);
    };
    const CalibrationResult r = calibrate(model, {}, cc);
    calibration = {{"data", cfg.calib}, {"samples", r.samples}, {"files", r.files}, {"sha256", r.sha256}};
  }

  const auto t0 = std::chrono::steady_clock::now();
  const BlockFormat f = block_format(cfg.weight_only_cfg);
  const int grid = static_cast<int>(cfg.awq_grid);
  // Sites are searched in parallel (each on its own, so the choice does not depend on the thread
  // count), then applied in graph order.
  std::vector<SiteChoice> choices(sites.size());
  {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const size_t workers = std::min<size_t>(sites.size(), ctx.threads > 0 ? static_cast<size_t>(ctx.threads) : hw);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < sites.size();)
        choices[i] = search_site(sites[i], stats.at(sites[i].x->name), f, grid, cfg.awq_clip);
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }
  stats.clear();  // the sampled rows: the scales and clips below need only the choices
  ir::release_free_memory();
  json layers = json::array();
  for (size_t i = 0; i < sites.size(); ++i) {
    const ScaleSite& s = sites[i];
    const SiteChoice& c = choices[i];
    if (!c.refusal.empty()) {
      skip_site(skipped, s, c.refusal);
      continue;
    }
    json layer = site_record(s);
    layer["alpha"] = c.alpha;
    layer["readers"] = node_labels(s.readers);
    layer["float_readers"] = node_labels(s.float_readers);
    layer["error_plain"] = static_cast<double>(static_cast<float>(c.plain));
    layer["error"] = static_cast<double>(static_cast<float>(c.error));
    json sj = json::array();
    for (float v : c.scales) sj.push_back(static_cast<double>(v));
    layer["scales"] = sj;
    apply_scale_site(*model.graph, s, c.scales, layer);
    if (!c.clips.empty()) {
      json clips = json::array();
      out.clipped_blocks += apply_clips(s, c.clips, f.block_size, clips);
      layer["clip"] = clips;
    }
    layers.push_back(layer);
    ++out.sites;
    out.readers += static_cast<int64_t>(s.readers.size());
    if (s.ln) ++out.layer_norms;
    else if (s.const_mul) ++out.scaled_muls;
    else ++out.muls;
  }
  out.record["grid"] = grid;
  out.record["clip_block_size"] = f.block_size;
  out.record["rows"] = kMaxRows;
  out.record["calibration"] = calibration;
  out.record["layers"] = layers;
  out.record["skipped"] = skipped;
  spdlog::info("quantize: awq: {} of {} MatMul inputs scaled ({} into a norm's constant, {} through an inserted Mul) in "
               "{:.2f} s, {} left as they are", out.sites, sites.size(), out.scaled_muls + out.layer_norms, out.muls,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), skipped.size());
  return out;
}

AwqResult apply_awq_record(ir::Model& model, const json& rec) {
  AwqResult out;
  out.enabled = true;
  out.record = rec;
  const ReplayedSites r = replay_scale_sites(model, rec, "awq");
  // The clips, on the scaled weights.
  try {
    const int64_t block_size = rec.value("clip_block_size", int64_t{0});
    for (const auto& l : rec.at("layers"))
      for (const auto& c : l.value("clip", json::array())) {
        const std::string name = c.at("weight").get<std::string>();
        ir::Value* w = model.graph->find_value(name);
        if (!w || !w->initializer || w->initializer->dtype() != ir::DType::F32 || w->initializer->rank() != 2 ||
            block_size < 1)
          throw ModelError("quantize: the state's awq clip of '" + name + "' does not fit this model: no float32 matrix of that name");
        const std::string bytes = base64_decode(c.at("steps").get<std::string>());
        ir::Tensor t = w->initializer->clone();
        apply_clip(t.mutable_data<float>().data(), t.dims()[0], t.dims()[1], std::vector<uint8_t>(bytes.begin(), bytes.end()),
                   block_size);
        w->initializer = std::move(t);
        out.clipped_blocks += std::count_if(bytes.begin(), bytes.end(), [](char v) { return v != 0; });
      }
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(std::string("quantize: the state's awq record is invalid: ") + e.what());
  } catch (Error& e) {
    e.add_context("quantize: the state's awq clip");
    throw;
  }
  out.sites = r.layers + r.muls + r.scaled_muls;
  out.layer_norms = r.layers;
  out.muls = r.muls;
  out.scaled_muls = r.scaled_muls;
  out.readers = r.readers;
  return out;
}

void add_awq_stats(json& stats, const AwqResult& a) {
  if (!a.enabled) return;
  stats["awq_sites"] = a.sites;
  stats["awq_readers"] = a.readers;
  stats["awq_inserted_muls"] = a.muls;
  stats["awq_clipped_blocks"] = a.clipped_blocks;
}

}  // namespace mcc::transforms::quantize
