// Accuracy metrics between a computed tensor and a reference: max abs/rel error, mean abs error,
// cosine similarity, SNR (dB), numpy-style allclose (NaN equal to NaN, Inf must match exactly),
// and top-1 agreement for class scores. Used by `mcc eval`, the conformance suite and stages'
// own checks, so every report uses the same definitions.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "backends/backend.h"

namespace mcc::backends {

/// allclose: |got - want| <= atol_eff + rtol * |want| per element, where atol_eff = atol, or, with
/// atol_scales_with_ref, atol * max(1, max |want|) over the finite reference values of the tensor
/// (each sequence element on its own). The scaled form is for defaults that must hold for outputs
/// of any magnitude: fp32 rounding error grows with the size of the values summed, so an output
/// reaching 416 (YOLOX box coordinates) carries ~1e-4 absolute noise even where it is near 0.
struct Tolerance {
  double atol = 1e-7;
  double rtol = 1e-3;
  bool atol_scales_with_ref = false;
};

struct TensorMetrics {
  bool comparable = true;      // same dtype class and shape
  std::string mismatch;        // why not comparable ("shape [1,10] vs [1,11]")
  int64_t numel = 0;
  double max_abs = 0, max_rel = 0, mean_abs = 0;
  double cosine = 1;           // 1 when both are all-zero
  double snr_db = 0;           // +inf when identical
  int64_t not_close = 0;       // elements failing allclose
  double atol_used = 0;        // the absolute tolerance allclose applied (scaled or not; largest over elements)
  int64_t nan_inf_mismatch = 0;  // NaN/Inf positions or signs that differ
  /// For [N, C] / [C] float class scores: argmax along the last axis equal for every row. Not set
  /// for embeddings: reference rows that all have unit L2 norm (within 1e-3) are vectors, not scores.
  std::optional<bool> top1_agree;
  /// Rows along the last axis (float tensors of rank >= 1 whose last dimension is > 1): how many,
  /// and the sum and minimum of their cosines (a row of zeros against zeros counts as 1).
  int64_t rows = 0;
  double row_cosine_sum = 0, row_cosine_min = 1;
  double row_cosine_mean() const { return rows ? row_cosine_sum / static_cast<double>(rows) : 1.0; }
  bool allclose() const { return comparable && not_close == 0 && nan_inf_mismatch == 0; }
};

/// Metrics of two identical empty values: the starting point of accumulate_metrics.
TensorMetrics identical_metrics();
/// Folds the metrics of one sequence element into `total`: counts add, the worst max/cosine/SNR
/// win, mean_abs is weighted by element count. A non-comparable element makes `total` so.
void accumulate_metrics(TensorMetrics& total, const TensorMetrics& element);

/// Compares `got` with `want`. Integer/bool/string tensors are compared exactly.
TensorMetrics compare_tensors(const ir::Tensor& got, const ir::Tensor& want, Tolerance tol);
/// The class a score tensor picks: argmax (first of equal maxima) of a float tensor of shape [C]
/// or [1, C] with C >= 2; nullopt for anything else (the tensors top1_agree and top-1 accuracy
/// against labels are defined for).
std::optional<int64_t> top1_class(const ir::Tensor& scores);
/// Same for runtime values (sequences compared element by element, optionals by presence).
TensorMetrics compare_values(const RValue& got, const RValue& want, Tolerance tol);

}  // namespace mcc::backends
