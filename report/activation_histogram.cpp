// Fixed-bin histograms of intermediate tensors over samples (see activation_histogram.h).
#include "report/activation_histogram.h"

#include <algorithm>
#include <cmath>

#include "ir/dtype.h"

namespace mcc::report {

ActivationHistograms::ActivationHistograms(const ir::Model& model, const std::vector<ValueHistogram>& ranges,
                                           size_t bins)
    : model_(model) {
  for (const auto& r : ranges) {
    ValueHistogram h{r.value, r.lo, r.hi, std::vector<uint64_t>(std::max<size_t>(1, bins), 0), 0};
    index_[h.value] = hists_.size();
    hists_.push_back(std::move(h));
  }
}

void ActivationHistograms::attach(backends::Executor& exec) {
  exec.set_observer([this](const ir::Node&, const ir::Value& v, const backends::RValue& rv) { count(v, rv); });
}

void ActivationHistograms::count(const ir::Value& v, const backends::RValue& rv) {
  if (v.owner != model_.graph.get() || rv.kind != backends::RValue::Kind::Tensor) return;
  auto it = index_.find(v.name);
  if (it == index_.end()) return;
  ValueHistogram& h = hists_[it->second];
  const ir::DType dt = rv.tensor.dtype();
  if (dt != ir::DType::F32 && dt != ir::DType::F64 && dt != ir::DType::F16 && dt != ir::DType::BF16) return;
  const size_t n = h.counts.size();
  const double width = h.hi - h.lo;
  ir::dispatch<MCC_FLOAT_DTYPES>(dt, "activation histogram", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (const T& raw : rv.tensor.data<T>()) {
      const double x = static_cast<double>(raw);
      if (!std::isfinite(x)) {
        ++h.non_finite;
        continue;
      }
      double pos = width > 0 ? (x - h.lo) / width * static_cast<double>(n) : 0.0;
      pos = std::clamp(pos, 0.0, static_cast<double>(n - 1));
      ++h.counts[static_cast<size_t>(pos)];
    }
  });
}

}  // namespace mcc::report
