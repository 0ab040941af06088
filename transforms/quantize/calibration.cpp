// Calibration: streaming statistics and range methods (see calibration.h).
#include "transforms/quantize/calibration.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "backends/executor.h"
#include "ir/errors.h"
#include "ir/sample_data.h"
#include "transforms/quantize/calibration_cache.h"

namespace fs = std::filesystem;

namespace mcc::transforms::quantize {

CalibMethod parse_calib_method(const std::string& s) {
  if (s == "minmax") return CalibMethod::MinMax;
  if (s == "percentile") return CalibMethod::Percentile;
  if (s == "entropy") return CalibMethod::Entropy;
  if (s == "mse") return CalibMethod::Mse;
  throw UsageError("quantize: unknown calibration method '" + s + "'; choose minmax, percentile, entropy or mse");
}

std::string calib_method_name(CalibMethod m) {
  switch (m) {
    case CalibMethod::MinMax: return "minmax";
    case CalibMethod::Percentile: return "percentile";
    case CalibMethod::Entropy: return "entropy";
    case CalibMethod::Mse: return "mse";
  }
  return "?";
}

// ---------------------------------------------------------------- TensorStats

TensorStats::TensorStats(bool histogram) {
  if (histogram) bins_.assign(2 * kHalfBins, 0);
}

void TensorStats::grow_to(int e) {
  if (e <= exponent_) return;
  if (!bins_.empty()) {
    const int s = e - exponent_;
    std::vector<uint64_t> nb(bins_.size(), 0);
    for (int k = 0; k < 2 * kHalfBins; ++k) {
      if (!bins_[k]) continue;
      const int64_t m = k - kHalfBins;
      const int64_t m2 = s >= 62 ? (m < 0 ? -1 : 0) : (m >> s);  // floor(m / 2^s)
      nb[static_cast<size_t>(m2 + kHalfBins)] += bins_[k];
    }
    bins_.swap(nb);
  }
  exponent_ = e;
}

void TensorStats::add(const float* x, size_t n) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  int64_t finite = 0;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (!std::isfinite(v)) {
      ++nonfinite_;
      continue;
    }
    ++finite;
    zeros_ += v == 0.f;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!finite) return;
  if (count_ == 0) {
    min_ = lo;
    max_ = hi;
  } else {
    min_ = std::min<double>(min_, lo);
    max_ = std::max<double>(max_, hi);
  }
  count_ += finite;
  if (bins_.empty()) return;
  const double amax = std::max(std::fabs(static_cast<double>(lo)), std::fabs(static_cast<double>(hi)));
  if (amax > 0) {
    int e = 0;
    std::frexp(amax, &e);  // amax < 2^e
    grow_to(e);
  }
  const int shift = static_cast<int>(std::log2(kHalfBins)) - exponent_;  // x * 2^shift = x * kHalfBins / R
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (!std::isfinite(v)) continue;
    const int64_t m = static_cast<int64_t>(std::floor(std::ldexp(static_cast<double>(v), shift)));
    bins_[static_cast<size_t>(std::clamp<int64_t>(m + kHalfBins, 0, 2 * kHalfBins - 1))] += 1;
  }
}

void TensorStats::merge(const TensorStats& o) {
  MCC_CHECK(bins_.empty() == o.bins_.empty(), "merging statistics with and without histograms");
  if (o.count_ == 0) {
    nonfinite_ += o.nonfinite_;
    return;
  }
  if (count_ == 0) {
    min_ = o.min_;
    max_ = o.max_;
  } else {
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }
  count_ += o.count_;
  nonfinite_ += o.nonfinite_;
  zeros_ += o.zeros_;
  if (bins_.empty()) return;
  TensorStats other = o;
  const int e = std::max(exponent_, o.exponent_);
  grow_to(e);
  other.grow_to(e);
  for (size_t k = 0; k < bins_.size(); ++k) bins_[k] += other.bins_[k];
}

// ---------------------------------------------------------------- range methods

namespace {

/// |x| histogram: mag[j] counts |x| in [j*w, (j+1)*w), w = R / kHalfBins.
std::vector<double> magnitudes(const TensorStats& s) {
  const int H = TensorStats::kHalfBins;
  std::vector<double> mag(H, 0.0);
  const auto& b = s.bins();
  for (int j = 0; j < H; ++j) mag[j] = static_cast<double>(b[H + j]) + static_cast<double>(b[H - 1 - j]);
  return mag;
}

int last_nonzero(const std::vector<double>& h) {
  for (int j = static_cast<int>(h.size()) - 1; j >= 0; --j)
    if (h[j] > 0) return j;
  return -1;
}

double kl_divergence(const std::vector<double>& hist, int i, int levels) {
  // Reference P: the first i bins, outliers added to the last one. Candidate Q: the same i bins
  // merged into `levels` groups and expanded back evenly over the non-empty bins of each group.
  std::vector<double> p(hist.begin(), hist.begin() + i);
  double outliers = 0;
  for (size_t j = static_cast<size_t>(i); j < hist.size(); ++j) outliers += hist[j];
  p[i - 1] += outliers;
  std::vector<double> q(i, 0.0);
  const double per = static_cast<double>(i) / levels;
  for (int g = 0; g < levels; ++g) {
    const int start = static_cast<int>(std::floor(g * per));
    const int stop = g == levels - 1 ? i : static_cast<int>(std::floor((g + 1) * per));
    double sum = 0;
    int nonzero = 0;
    for (int j = start; j < stop; ++j) {
      sum += hist[j];
      nonzero += hist[j] > 0;
    }
    if (!nonzero) continue;
    for (int j = start; j < stop; ++j)
      if (hist[j] > 0) q[j] = sum / nonzero;
  }
  double ps = 0, qs = 0;
  for (int j = 0; j < i; ++j) {
    ps += p[j];
    qs += q[j];
  }
  if (ps <= 0 || qs <= 0) return std::numeric_limits<double>::infinity();
  constexpr double eps = 1e-12;
  double kl = 0;
  for (int j = 0; j < i; ++j) {
    if (p[j] <= 0) continue;
    const double pj = p[j] / ps, qj = std::max(q[j] / qs, eps);
    kl += pj * std::log(pj / qj);
  }
  return kl;
}

double entropy_threshold(const TensorStats& s, int levels) {
  auto mag = magnitudes(s);
  mag[0] -= static_cast<double>(s.zeros());
  const int last = last_nonzero(mag);
  const double w = std::ldexp(1.0, s.exponent()) / TensorStats::kHalfBins;
  const double amax = std::max(std::fabs(s.min()), std::fabs(s.max()));
  if (last < 0) return 0;
  const int nb = last + 1;
  if (nb <= levels) return amax;
  std::vector<double> hist(mag.begin(), mag.begin() + nb);
  double best = std::numeric_limits<double>::infinity();
  int best_i = nb;
  for (int i = levels; i <= nb; ++i) {
    const double kl = kl_divergence(hist, i, levels);
    if (kl < best) {
      best = kl;
      best_i = i;
    }
  }
  return std::min(amax, best_i * w);
}

/// Prefix sums over the signed bins (bin centers c_k): count, sum c, sum c^2.
struct Prefix {
  std::vector<double> n, c1, c2, center;
};

Prefix prefix_sums(const TensorStats& s) {
  const auto& b = s.bins();
  const double w = std::ldexp(1.0, s.exponent()) / TensorStats::kHalfBins;
  Prefix p;
  const size_t N = b.size();
  p.n.assign(N + 1, 0);
  p.c1.assign(N + 1, 0);
  p.c2.assign(N + 1, 0);
  p.center.resize(N);
  for (size_t k = 0; k < N; ++k) {
    const double c = (static_cast<double>(k) - TensorStats::kHalfBins + 0.5) * w;
    p.center[k] = c;
    const double n = static_cast<double>(b[k]);
    p.n[k + 1] = p.n[k] + n;
    p.c1[k + 1] = p.c1[k] + n * c;
    p.c2[k + 1] = p.c2[k] + n * c * c;
  }
  return p;
}

/// Expected squared error of quantizing the histogram to [lo, hi] with `steps` steps.
double mse_for(const Prefix& p, double lo, double hi, double steps) {
  const size_t N = p.center.size();
  // Bins with center < lo are clipped up to lo; center > hi clipped down to hi.
  const size_t a = static_cast<size_t>(std::lower_bound(p.center.begin(), p.center.end(), lo) - p.center.begin());
  const size_t z = static_cast<size_t>(std::upper_bound(p.center.begin(), p.center.end(), hi) - p.center.begin());
  const double step = (hi - lo) / steps;
  const double below = p.c2[a] - 2 * lo * p.c1[a] + lo * lo * p.n[a];
  const double above = (p.c2[N] - p.c2[z]) - 2 * hi * (p.c1[N] - p.c1[z]) + hi * hi * (p.n[N] - p.n[z]);
  const double inside = (p.n[z] - p.n[a]) * step * step / 12.0;
  return below + above + inside;
}

}  // namespace

std::pair<double, double> compute_range(const TensorStats& s, const RangeSpec& spec) {
  if (s.empty()) return {0.0, 0.0};
  double lo = s.min(), hi = s.max();
  const double amax = std::max(std::fabs(lo), std::fabs(hi));
  const bool nonneg = lo >= 0 && !spec.symmetric;
  const double levels = spec.bits >= 16 ? 65536.0 : 256.0;
  if (spec.method != CalibMethod::MinMax) {
    MCC_CHECK(s.has_histogram(), "calibration method " + calib_method_name(spec.method) + " needs a histogram");
    const double w = std::ldexp(1.0, s.exponent()) / TensorStats::kHalfBins;
    const double total = static_cast<double>(s.count());
    switch (spec.method) {
      case CalibMethod::Percentile: {
        const double q = spec.percentile / 100.0;
        if (spec.symmetric || nonneg) {
          const auto mag = magnitudes(s);
          double cum = 0;
          double t = amax;
          for (int j = 0; j < TensorStats::kHalfBins; ++j) {
            cum += mag[j];
            if (cum >= q * total) {
              t = std::min(amax, (j + 1) * w);
              break;
            }
          }
          lo = spec.symmetric ? -t : 0.0;
          hi = t;
        } else {
          const auto& b = s.bins();
          double cum = 0;
          bool lo_set = false;
          for (size_t k = 0; k < b.size(); ++k) {
            cum += static_cast<double>(b[k]);
            const double left = (static_cast<double>(k) - TensorStats::kHalfBins) * w;
            if (!lo_set && cum > (1 - q) * total) {
              lo = std::max(s.min(), left);
              lo_set = true;
            }
            if (cum >= q * total) {
              hi = std::min(s.max(), left + w);
              break;
            }
          }
        }
        break;
      }
      case CalibMethod::Entropy: {
        const double t = entropy_threshold(s, nonneg ? 256 : 128);
        lo = spec.symmetric ? -t : std::max(s.min(), -t);
        hi = spec.symmetric ? t : std::min(s.max(), t);
        break;
      }
      case CalibMethod::Mse: {
        const Prefix p = prefix_sums(s);
        const int last = static_cast<int>(std::ceil(amax / w));
        double best = std::numeric_limits<double>::infinity();
        double best_t = amax;
        for (int j = 1; j <= std::max(1, last); ++j) {
          const double t = std::min(amax, j * w);
          const double l = spec.symmetric ? -t : std::max(s.min(), -t);
          const double h = spec.symmetric ? t : std::min(s.max(), t);
          const double steps = spec.symmetric ? (levels / 2 - 1) * 2 : levels - 1;
          const double e = mse_for(p, std::min(l, 0.0), std::max(h, 0.0), steps);
          if (e < best) {
            best = e;
            best_t = t;
          }
        }
        lo = spec.symmetric ? -best_t : std::max(s.min(), -best_t);
        hi = spec.symmetric ? best_t : std::min(s.max(), best_t);
        break;
      }
      case CalibMethod::MinMax: break;
    }
  }
  if (spec.symmetric) {
    const double a = std::max(std::fabs(lo), std::fabs(hi));
    lo = -a;
    hi = a;
  }
  return {std::min(lo, 0.0), std::max(hi, 0.0)};
}

// ---------------------------------------------------------------- SHA-256

namespace {

class Sha256 {
 public:
  Sha256() { h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}; }
  void update(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += n;
    while (n) {
      const size_t take = std::min(n, 64 - used_);
      std::memcpy(buf_.data() + used_, p, take);
      used_ += take;
      p += take;
      n -= take;
      if (used_ == 64) {
        block(buf_.data());
        used_ = 0;
      }
    }
  }
  std::string hex() {
    const uint64_t bits = total_ * 8;
    const uint8_t one = 0x80, zero = 0;
    update(&one, 1);
    while (used_ != 56) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(len, 8);
    static const char* d = "0123456789abcdef";
    std::string out;
    for (uint32_t v : h_)
      for (int i = 28; i >= 0; i -= 4) out += d[(v >> i) & 15];
    return out;
  }

 private:
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void block(const uint8_t* b) {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
        0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
        0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
        0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
        0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
        0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (uint32_t(b[4 * i]) << 24) | (uint32_t(b[4 * i + 1]) << 16) | (uint32_t(b[4 * i + 2]) << 8) | b[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], bb = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
      h = g; g = f; f = e; e = d + t1; d = c; c = bb; bb = a; a = t1 + t2;
    }
    h_[0] += a; h_[1] += bb; h_[2] += c; h_[3] += d; h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
  }
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t used_ = 0;
  uint64_t total_ = 0;
};

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

std::string hash_sample_files(const std::vector<std::string>& sample_dirs, int64_t* files) {
  Sha256 h;
  int64_t count = 0;
  std::vector<char> chunk(1 << 20);
  for (const auto& dir : sample_dirs) {
    std::vector<fs::path> names;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) names.push_back(e.path());
    std::sort(names.begin(), names.end());
    const std::string folder = fs::path(dir).filename().string();
    for (const auto& p : names) {
      const std::string rel = folder + "/" + p.filename().string();
      h.update(rel.data(), rel.size() + 1);  // with the terminating NUL
      const uint64_t size = fs::file_size(p);
      uint8_t le[8];
      for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(size >> (8 * i));
      h.update(le, 8);
      std::ifstream in(p, std::ios::binary);
      if (!in) throw ModelError(p.string() + ": cannot read calibration file");
      while (in) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        h.update(chunk.data(), static_cast<size_t>(in.gcount()));
      }
      ++count;
    }
  }
  if (files) *files = count;
  return h.hex();
}

// ---------------------------------------------------------------- collection

void ChannelMoments::add(const float* x, const std::vector<int64_t>& dims) {
  if (dims.size() < 2) return;
  const size_t channels = static_cast<size_t>(dims[1]);
  int64_t inner = 1;
  for (size_t d = 2; d < dims.size(); ++d) inner *= dims[d];
  if (sum.empty()) {
    sum.assign(channels, 0.0);
    sumsq.assign(channels, 0.0);
  }
  if (sum.size() != channels) return;  // a tensor whose channel count varies is left as first seen
  for (int64_t n = 0; n < dims[0]; ++n)
    for (size_t c = 0; c < channels; ++c) {
      const float* p = x + (static_cast<size_t>(n) * channels + c) * static_cast<size_t>(inner);
      double s = 0, q = 0;
      for (int64_t i = 0; i < inner; ++i) {
        const double v = std::isfinite(p[i]) ? static_cast<double>(p[i]) : 0.0;
        s += v;
        q += v * v;
      }
      sum[c] += s;
      sumsq[c] += q;
    }
  count += dims[0] * inner;
}

namespace {

/// Adds each channel (axis 1) of `t` to its own statistics; a changed channel count marks the
/// tensor in `varying` (its per-channel statistics are then dropped).
void add_per_channel(std::vector<TensorStats>& stats, const ir::Tensor& t, bool histograms, std::set<std::string>& varying,
                     const std::string& name) {
  const auto& dims = t.dims();
  const size_t channels = static_cast<size_t>(dims[1]);
  if (stats.empty()) stats.assign(channels, TensorStats(histograms));
  if (stats.size() != channels) {
    varying.insert(name);
    return;
  }
  size_t inner = 1;
  for (size_t d = 2; d < dims.size(); ++d) inner *= static_cast<size_t>(dims[d]);
  const float* x = t.data<float>().data();
  for (int64_t n = 0; n < dims[0]; ++n)
    for (size_t c = 0; c < channels; ++c) stats[c].add(x + (static_cast<size_t>(n) * channels + c) * inner, inner);
}

}  // namespace

/// The folder's samples split at `holdout` from the end; UsageError when nothing is left before it.
std::vector<std::string> samples_checked_for_holdout(const std::string& dir, size_t holdout) {
  std::vector<std::string> dirs = ir::list_sample_dirs(dir);
  if (holdout >= dirs.size() && holdout > 0)
    throw UsageError("holdout=" + std::to_string(holdout) + " leaves no calibration sample in '" + dir + "' (" +
                     std::to_string(dirs.size()) + " samples)");
  return dirs;
}

std::vector<std::string> calibration_sample_dirs(const std::string& dir, size_t max_samples, size_t holdout) {
  std::vector<std::string> dirs = samples_checked_for_holdout(dir, holdout);
  dirs.resize(dirs.size() - holdout);
  if (max_samples && dirs.size() > max_samples) dirs.resize(max_samples);
  return dirs;
}

std::vector<std::string> held_back_sample_dirs(const std::string& dir, size_t holdout, size_t limit) {
  std::vector<std::string> dirs = samples_checked_for_holdout(dir, holdout);
  if (holdout > 0) dirs.erase(dirs.begin(), dirs.end() - static_cast<std::ptrdiff_t>(holdout));
  if (limit && dirs.size() > limit) dirs.resize(limit);
  return dirs;
}

namespace {

/// The last node of g (in its order) producing a watched tensor; nullptr when a watched tensor
/// is produced inside a subgraph only or no watched tensor has a producer (run everything).
const ir::Node* last_producer(const ir::Graph& g, const std::vector<std::string>& watch, const CalibrationConfig& cfg) {
  std::set<const ir::Node*> producers;
  for (const auto* names : {&watch, &cfg.channel_watch, &cfg.per_channel_watch, &cfg.tap_watch})
    for (const auto& name : *names)
      if (const ir::Value* v = g.find_value(name); v && v->producer) {
        if (v->producer->owner != &g) return nullptr;
        producers.insert(v->producer);
      }
  const ir::Node* last = nullptr;
  for (const ir::Node* n : g.nodes())
    if (producers.count(n)) last = n;
  return last;
}

}  // namespace

CalibrationResult calibrate(const ir::Model& model, const std::vector<std::string>& watch, const CalibrationConfig& cfg) {
  const std::vector<std::string> dirs = calibration_sample_dirs(cfg.data_dir, cfg.max_samples, cfg.holdout);
  CalibrationResult res;
  res.sha256 = hash_sample_files(dirs, &res.files);
  // Within the escalation ladder: the same model, samples and watch list give the kept result
  // (calibration_cache.h), and what is collected now carries histograms for the later attempts.
  const bool reuse = calibration_reuse() && cfg.tap_watch.empty() && !cfg.tap;
  std::string key;
  if (reuse) {
    key = calibration_key(model, watch, cfg, res.sha256);
    if (std::optional<CalibrationResult> hit = kept_calibration(key)) {
      spdlog::info("quantize: calibration statistics of {} samples reused (same model, samples and tensors)", hit->samples);
      if (cfg.progress) cfg.progress(dirs.size(), dirs.size());
      return std::move(*hit);
    }
  }
  const bool histograms = cfg.histograms || reuse;

  const ir::Graph& g = *model.graph;
  std::map<const ir::Value*, TensorStats*> slot;
  std::map<std::string, const ir::Value*> inputs;  // watched graph inputs, fed directly
  for (const auto& name : watch) {
    const ir::Value* v = g.find_value(name);
    MCC_CHECK(v != nullptr, "calibration: no value '" + name + "' in the main graph");
    auto [it, fresh] = res.stats.emplace(name, TensorStats(histograms));
    slot[v] = &it->second;
    if (!v->producer) inputs[name] = v;
  }
  std::map<const ir::Value*, ChannelMoments*> moments;
  for (const auto& name : cfg.channel_watch) {
    const ir::Value* v = g.find_value(name);
    MCC_CHECK(v != nullptr, "calibration: no value '" + name + "' in the main graph");
    moments[v] = &res.channels[name];
    if (!v->producer) inputs[name] = v;
  }
  std::map<const ir::Value*, std::string> per_channel;
  std::set<std::string> varying;  // per-channel tensors seen with different channel counts
  for (const auto& name : cfg.per_channel_watch) {
    const ir::Value* v = g.find_value(name);
    MCC_CHECK(v != nullptr, "calibration: no value '" + name + "' in the main graph");
    per_channel[v] = name;
    if (!v->producer) inputs[name] = v;
  }
  std::set<const ir::Value*> tapped;
  for (const auto& name : cfg.tap_watch) {
    const ir::Value* v = g.find_value(name);
    MCC_CHECK(v != nullptr, "calibration: no value '" + name + "' in the main graph");
    tapped.insert(v);
    if (!v->producer) inputs[name] = v;
  }
  auto observe = [&](const ir::Value& v, const ir::Tensor& t) {
    if (cfg.tap && tapped.count(&v)) cfg.tap(v.name, t);
    if (const auto m = moments.find(&v); m != moments.end() && t.dtype() == ir::DType::F32)
      m->second->add(t.data<float>().data(), t.dims());
    if (const auto pc = per_channel.find(&v); pc != per_channel.end() && t.dtype() == ir::DType::F32 && t.rank() >= 2)
      add_per_channel(res.channel_stats[pc->second], t, cfg.histograms, varying, pc->second);
    const auto it = slot.find(&v);
    if (it == slot.end()) return;
    res.dtypes[v.name] = t.dtype();
    if (t.dtype() != ir::DType::F32) return;
    const auto x = t.data<float>();
    it->second->add(x.data(), x.size());
  };

  backends::ExecOptions eo;
  eo.threads = cfg.threads;
  eo.keep_weight_copies = !backends::lean_weight_copies(model);
  backends::Executor ex(model, eo);
  ex.set_observer([&](const ir::Node&, const ir::Value& v, const backends::RValue& r) {
    if (r.kind == backends::RValue::Kind::Tensor && r.tensor.defined()) observe(v, r.tensor);
  });
  if (cfg.stop_after_watched) ex.set_last_node(last_producer(g, watch, cfg));
  for (size_t i = 0; i < dirs.size(); ++i) {
    ir::BoundSample s = ir::bind_sample(g, ir::load_sample(dirs[i], false));
    std::vector<std::pair<std::string, backends::RValue>> feeds;
    for (auto& [name, t] : s.feeds) {
      if (const auto it = inputs.find(name); it != inputs.end()) observe(*it->second, t);
      feeds.emplace_back(name, backends::RValue::of(std::move(t)));
    }
    try {
      ex.run(feeds);
    } catch (Error& e) {
      e.add_context("calibration sample " + dirs[i]);
      throw;
    }
    res.sample_names.push_back(fs::path(dirs[i]).filename().string());
    ++res.samples;
    if (cfg.progress) cfg.progress(i + 1, dirs.size());
  }
  for (auto it = res.stats.begin(); it != res.stats.end();) {
    if (it->second.empty()) it = res.stats.erase(it);
    else ++it;
  }
  for (const auto& name : varying) res.channel_stats.erase(name);
  if (reuse) keep_calibration(key, res);
  return res;
}

}  // namespace mcc::transforms::quantize
