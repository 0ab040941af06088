// Histograms of a few intermediate tensors of a model over many samples, for the HTML report's
// activation charts. The value range of each tensor must be known before (the per-layer
// comparison's first pass records it: LayerStat::ref_min/ref_max); this second pass then counts
// every finite element into a fixed number of equal bins over that range. Memory is the bins
// only: each tensor is counted when the executor produces it and never kept. Values outside the
// range (none when both passes see the same samples) go to the edge bins; NaN and Inf are
// counted apart. Only tensors of the model's main graph, and only float tensors, are counted.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backends/executor.h"
#include "ir/graph.h"

namespace mcc::report {

struct ValueHistogram {
  std::string value;
  double lo = 0, hi = 0;          // the bins cover [lo, hi]
  std::vector<uint64_t> counts;
  uint64_t non_finite = 0;
};

class ActivationHistograms {
 public:
  /// `model` must outlive this object; `ranges`: value name -> [lo, hi].
  ActivationHistograms(const ir::Model& model, const std::vector<ValueHistogram>& ranges, size_t bins);

  /// Installs the counting observer (replacing any other) on an executor of `model`.
  void attach(backends::Executor& exec);

  /// In the order the ranges were given.
  const std::vector<ValueHistogram>& histograms() const { return hists_; }

 private:
  void count(const ir::Value& v, const backends::RValue& rv);

  const ir::Model& model_;
  std::vector<ValueHistogram> hists_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace mcc::report
