// One model output's agreement with its reference over many samples: each sample's metrics
// (backends::compare_tensors / compare_values) folded into running figures. `mcc eval` and the
// check stage both aggregate through it, so the two report the same figures the same way:
// the worst max abs/rel error, the mean abs error, the mean and worst cosine, the worst SNR, the
// share of samples whose top-1 agrees (class scores) and the cosine of rows along the last axis.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "backends/compare.h"
#include "judge/interval.h"

namespace mcc::judge {

struct OutputStats {
  std::string name;
  int samples = 0;
  double max_abs = 0, max_rel = 0, mean_abs_sum = 0;
  double cosine_sum = 0, cosine_sq_sum = 0, cosine_min = 1;
  double snr_min = std::numeric_limits<double>::infinity();
  double atol_used = 0;                 // the largest absolute tolerance allclose applied
  int top1_samples = 0, top1_agree = 0; // samples with class scores, and those whose top-1 agrees
  int64_t rows = 0;                     // rows along the last axis, over all samples
  double row_cosine_sum = 0, row_cosine_min = 1;
  int nothing_samples = 0;              // probability outputs: samples judged agreeing (probability_outputs.h)

  /// Folds one sample's metrics in.
  void add(const backends::TensorMetrics& m);

  double mean_abs() const { return samples ? mean_abs_sum / samples : 0.0; }
  double cosine_mean() const { return samples ? cosine_sum / samples : 1.0; }
  /// 95 % interval of the mean cosine over the samples (unbounded below 2 samples).
  Interval cosine_interval() const { return MeanAccumulator{samples, cosine_sum, cosine_sq_sum}.interval(); }
  /// Every sample held class scores ([C] / [N, C] floats; see TensorMetrics::top1_agree).
  bool class_scores() const { return samples > 0 && top1_samples == samples; }
  double top1_agreement() const { return top1_samples ? static_cast<double>(top1_agree) / top1_samples : 1.0; }
  double row_cosine_mean() const { return rows ? row_cosine_sum / static_cast<double>(rows) : 1.0; }
};

/// +-inf as +-1e308, so the figures of JSON reports stay numbers (the HTML report reads them back).
double json_number(double v);
/// A figure as text reports and messages print it: six significant digits (printf "%.6g").
std::string figure_text(double v);

}  // namespace mcc::judge
