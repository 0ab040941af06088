// Top-1 accuracy against class labels for `mcc eval --labels FILE` (labels: ir/labels.h).
//
// Sample i of the data folder, in the order sample_dirs() lists them, has label i. For every
// output that holds class scores (a float tensor of shape [C] or [1, C], C >= 2; see
// backends::top1_class) the model's top-1 accuracy is counted, and, where the sample has
// reference outputs (--reference model, or --golden expected outputs), the reference's top-1
// accuracy and the drop in points (reference - model). Limits: --max-top1-drop P fails when the
// drop exceeds P points; --min-top1 P fails when the model's accuracy is below P percent.
// Does not apply to detectors, sequence outputs or batched scores [N, C] with N > 1: those have
// no single class per sample.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.h"

namespace mcc::judge {

struct Top1Limits {
  std::optional<double> max_drop;  // points
  std::optional<double> min_top1;  // percent
};

struct Top1Row {
  std::string output;
  int64_t samples = 0, correct = 0;          // the model
  int64_t ref_samples = 0, ref_correct = 0;  // the reference, on samples that have one
  bool passed = true;
  std::string why;                           // the failed limit
  double accuracy() const;                   // percent
  bool has_reference() const { return ref_samples > 0 && ref_samples == samples; }
  double reference_accuracy() const;         // percent
  double drop() const { return reference_accuracy() - accuracy(); }  // points
};

/// The labels of `path` for the samples of `data_dir`: one label per sample in the folder
/// (`total` of them), of which the first `used` are returned (--samples). Throws ModelError
/// naming the file and both counts when they differ.
std::vector<int64_t> labels_for_samples(const std::string& path, const std::string& data_dir, size_t total, size_t used);

class Top1Accuracy {
 public:
  Top1Accuracy(std::vector<int64_t> labels, std::vector<std::string> outputs);
  /// Counts sample `index`: the model's outputs and, where present, the reference's.
  void add(size_t index, const std::vector<backends::RValue>& got,
           const std::vector<std::optional<backends::RValue>>& want);
  /// One row per output that held class scores, judged under `limits`. Throws UsageError when
  /// no output did (--labels then has nothing to score).
  std::vector<Top1Row> finish(const Top1Limits& limits) const;

 private:
  std::vector<int64_t> labels_;
  std::vector<Top1Row> rows_;
};

/// The "top1" section of the eval report.
nlohmann::ordered_json top1_json(const std::vector<Top1Row>& rows, const Top1Limits& limits, const std::string& labels_path);

}  // namespace mcc::judge
