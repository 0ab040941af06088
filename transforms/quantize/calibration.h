// Calibration for the quantize stage: runs the float model on the cpu Executor over a data
// folder, one sample at a time, and keeps STREAMING statistics of every tensor it is asked to
// watch: exact running min/max and a fixed-size histogram whose range grows by merging bins, so
// memory is a constant per tensor whatever the number of samples. No graph is modified here.
//
// Histogram: 2 * kHalfBins bins over [-R, R) with R = 2^e the smallest power of two above every
// |x| seen (e only grows). A value x falls in bin floor(x * kHalfBins / R) + kHalfBins; scaling by
// a power of two is exact in floating point, and growing R to 2^(e+s) merges bins by an
// arithmetic shift of the bin offset, which is the bin the value would have had under the new R.
// Counts are integers. So the final histogram depends only on the multiset of values: the same
// samples in any order, or split into any chunks, give identical statistics and ranges.
//
// Range methods (per tensor, from the statistics alone):
//   minmax      [min, max]
//   percentile  symmetric: |x| quantile p; asymmetric: the (100-p) and p quantiles
//   entropy     TensorRT's KL-divergence threshold on the |x| histogram (128 levels, or 256 for
//               non-negative data quantized asymmetrically); range [-t, t] clipped to [min, max].
//               Exact zeros are left out of the histogram it compares: zero is exact at any
//               threshold, and the spike of ReLU zeros otherwise pulls t far too low.
//   mse         the clipping threshold t minimising the expected quantization MSE: values inside
//               the range cost step^2/12, values outside cost their squared clipping distance
// Every range is widened to include 0 (zero must be exactly representable).
// Non-finite values (NaN, +-Inf) are counted and left out of the statistics.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace mcc::transforms::quantize {

enum class CalibMethod { MinMax, Percentile, Entropy, Mse };
/// "minmax", "percentile", "entropy", "mse"; parse throws UsageError on anything else.
CalibMethod parse_calib_method(const std::string& s);
std::string calib_method_name(CalibMethod m);

class TensorStats {
 public:
  static constexpr int kHalfBins = 2048;
  static constexpr int kMinExponent = -40;

  explicit TensorStats(bool histogram = true);
  void add(const float* x, size_t n);
  /// Adds another tensor's statistics (chunked collection); same result as adding its values.
  void merge(const TensorStats& o);

  bool empty() const { return count_ == 0; }
  int64_t count() const { return count_; }
  int64_t nonfinite() const { return nonfinite_; }
  int64_t zeros() const { return zeros_; }  // values exactly 0 (representable at any range)
  double min() const { return min_; }
  double max() const { return max_; }
  bool has_histogram() const { return !bins_.empty(); }
  int exponent() const { return exponent_; }             // histogram range R = 2^exponent
  const std::vector<uint64_t>& bins() const { return bins_; }
  /// Bytes held by this object (constant in the number of values added).
  size_t memory_bytes() const { return sizeof(*this) + bins_.capacity() * sizeof(uint64_t); }
  bool operator==(const TensorStats&) const = default;

 private:
  void grow_to(int e);
  int64_t count_ = 0, nonfinite_ = 0, zeros_ = 0;
  double min_ = 0, max_ = 0;
  int exponent_ = kMinExponent;
  std::vector<uint64_t> bins_;
};

struct RangeSpec {
  CalibMethod method = CalibMethod::MinMax;
  double percentile = 99.99;  // for CalibMethod::Percentile, in (50, 100]
  bool symmetric = false;     // the range will be quantized symmetrically (int8 with zero point 0)
  int bits = 8;               // 8 or 16: number of quantization levels for entropy/mse
};

/// The calibrated range [lo, hi] (lo <= 0 <= hi) of a tensor. Methods other than minmax need a
/// histogram (InternalError otherwise). An empty tensor gives [0, 0].
std::pair<double, double> compute_range(const TensorStats& s, const RangeSpec& spec);

struct CalibrationConfig {
  std::string data_dir;
  size_t max_samples = 0;       // 0 = every sample in the folder
  size_t holdout = 0;           // the folder's last samples, kept out (judged by a check stage)
  bool histograms = true;       // false when every method is minmax (saves memory)
  int threads = 0;
  /// Float32 tensors (rank >= 2) whose per-channel (axis 1) first and second moments are also
  /// collected, for bias correction and sensitivity estimates (may overlap `watch`).
  std::vector<std::string> channel_watch;
  /// Float32 tensors (rank >= 2) that also get one TensorStats per channel (axis 1), for
  /// per-channel activation ranges (quantize/depthwise.h).
  std::vector<std::string> per_channel_watch;
  /// Called after each sample with (done, total).
  std::function<void(size_t, size_t)> progress;
  /// Tensors handed to `tap` whenever they are produced (any type), for statistics the stage
  /// keeps itself (layer-input Hessians for GPTQ, per-channel maxima for SmoothQuant).
  std::vector<std::string> tap_watch;
  std::function<void(const std::string& name, const ir::Tensor& t)> tap;
  /// Each sample's run ends once every watched tensor has been produced (the rest of the graph
  /// is not run): for a pass that collects the statistics of a model's first layers only.
  bool stop_after_watched = false;
};

/// Streaming per-channel moments along axis 1: sums in double, memory constant in samples.
struct ChannelMoments {
  int64_t count = 0;             // values per channel
  std::vector<double> sum, sumsq;
  void add(const float* x, const std::vector<int64_t>& dims);
  double mean(size_t c) const { return count ? sum[c] / static_cast<double>(count) : 0.0; }
  double second_moment(size_t c) const { return count ? sumsq[c] / static_cast<double>(count) : 0.0; }
};

struct CalibrationResult {
  std::map<std::string, ChannelMoments> channels;  // by tensor name (channel_watch)
  std::map<std::string, TensorStats> stats;  // by tensor name (absent = never produced as float32)
  /// per_channel_watch: one TensorStats per channel (absent = never seen as float32 of rank >= 2,
  /// or seen with different channel counts).
  std::map<std::string, std::vector<TensorStats>> channel_stats;
  std::map<std::string, ir::DType> dtypes;   // observed element type of each watched tensor
  int64_t samples = 0;
  int64_t files = 0;
  std::string sha256;  // over the used samples' files: relative names and bytes, sorted by name
  std::vector<std::string> sample_names;
};

/// Runs `model` (float, unmodified) over the samples of cfg.data_dir and collects statistics of
/// the float32 tensors named in `watch` (graph inputs or node outputs of the main graph).
/// Throws ModelError for a missing or empty folder or a sample that does not fit the model.
CalibrationResult calibrate(const ir::Model& model, const std::vector<std::string>& watch, const CalibrationConfig& cfg);

/// The calibration samples of a folder: all but the last `holdout` (UsageError when that leaves
/// none), then at most `max_samples` (0: no cap), in natural order.
std::vector<std::string> calibration_sample_dirs(const std::string& dir, size_t max_samples, size_t holdout);

/// The samples a check judges: the folder's last `holdout` (all when 0; UsageError when that
/// leaves no calibration sample), then at most `limit` (0: no cap) — the complement of
/// calibration_sample_dirs for the same holdout.
std::vector<std::string> held_back_sample_dirs(const std::string& dir, size_t holdout, size_t limit);

/// Lower-case hex SHA-256 of the files in the given sample folders (each folder's files sorted by
/// name; every file contributes "folder/name", a NUL, its size as 8 little-endian bytes and its
/// bytes). Files are read in chunks.
std::string hash_sample_files(const std::vector<std::string>& sample_dirs, int64_t* files = nullptr);

/// Lower-case hex SHA-256 of a byte string (FIPS 180-4).
std::string sha256_hex(const std::string& bytes);

}  // namespace mcc::transforms::quantize
