// Metric computation in f64 over any numeric dtype (see compare.h).
#include "backends/compare.h"
#include "ir/dims_text.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mcc::backends {
namespace {

using ir::dims_text;

std::vector<double> as_f64(const ir::Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  ir::dispatch<MCC_ALL_DTYPES>(t.dtype(), "compare", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T v : t.data<T>()) out.push_back(static_cast<double>(v));
  });
  return out;
}

/// A tensor's elements read as double: float32 data in place (LM logits are tens of MB, a double
/// copy twice that), other dtypes through a converted copy.
class AsF64 {
 public:
  explicit AsF64(const ir::Tensor& t) {
    if (t.dtype() == ir::DType::F32) {
      f_ = t.data<float>().data();
      n_ = static_cast<size_t>(t.numel());
    } else {
      copy_ = as_f64(t);
      n_ = copy_.size();
    }
  }
  double operator[](size_t i) const { return f_ ? static_cast<double>(f_[i]) : copy_[i]; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }

 private:
  const float* f_ = nullptr;
  std::vector<double> copy_;
  size_t n_ = 0;
};

}  // namespace

namespace {

/// Cosine of each row along the last axis into m.rows / row_cosine_*; returns whether every
/// reference row has unit L2 norm (an embedding, not class scores). Rows with non-finite values
/// are left out.
bool add_row_cosines(const AsF64& g, const AsF64& w, const std::vector<int64_t>& d,
                     TensorMetrics& m) {
  if (d.empty() || d.back() <= 1 || w.empty()) return false;
  const size_t c = static_cast<size_t>(d.back()), rows = w.size() / c;
  bool unit = true;
  for (size_t r = 0; r < rows; ++r) {
    double dot = 0, ng = 0, nw = 0;
    bool finite = true;
    for (size_t j = r * c; j < (r + 1) * c; ++j) {
      finite = finite && std::isfinite(g[j]) && std::isfinite(w[j]);
      dot += g[j] * w[j], ng += g[j] * g[j], nw += w[j] * w[j];
    }
    if (!finite) continue;
    unit = unit && std::abs(std::sqrt(nw) - 1.0) <= 1e-3;
    const double cos = ng == 0 && nw == 0 ? 1.0 : (ng == 0 || nw == 0 ? 0.0 : dot / (std::sqrt(ng) * std::sqrt(nw)));
    ++m.rows;
    m.row_cosine_sum += cos;
    m.row_cosine_min = std::min(m.row_cosine_min, cos);
  }
  return unit && m.rows > 0;
}

}  // namespace

TensorMetrics compare_tensors(const ir::Tensor& got, const ir::Tensor& want, Tolerance tol) {
  TensorMetrics m;
  m.numel = want.numel();
  if (got.dims() != want.dims()) {
    m.comparable = false;
    m.mismatch = "shape " + dims_text(got.dims()) + " vs expected " + dims_text(want.dims());
    return m;
  }
  if (got.dtype() != want.dtype()) {
    m.comparable = false;
    m.mismatch = "dtype " + ir::dtype_name(got.dtype()) + " vs expected " + ir::dtype_name(want.dtype());
    return m;
  }
  if (!ir::info(want.dtype()).computable) {
    // float8 / int4 / float4 and other storage-only dtypes: compared bit for bit.
    const auto a = got.bytes(), b = want.bytes();
    m.not_close = (a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin())) ? 0 : 1;
    m.cosine = m.not_close ? 0 : 1;
    m.snr_db = m.not_close ? 0 : std::numeric_limits<double>::infinity();
    if (m.not_close) m.mismatch = "bytes differ";
    return m;
  }
  if (want.dtype() == ir::DType::String) {
    for (int64_t i = 0; i < m.numel; ++i)
      if (got.strings()[static_cast<size_t>(i)] != want.strings()[static_cast<size_t>(i)]) ++m.not_close;
    m.cosine = m.not_close ? 0 : 1;
    m.snr_db = m.not_close ? 0 : std::numeric_limits<double>::infinity();
    return m;
  }
  const bool exact = !ir::info(want.dtype()).is_float;
  const AsF64 g(got), w(want);
  double atol = tol.atol;
  if (tol.atol_scales_with_ref && !exact) {
    double max_ref = 1;
    for (size_t i = 0; i < w.size(); ++i)
      if (std::isfinite(w[i])) max_ref = std::max(max_ref, std::abs(w[i]));
    atol *= max_ref;
  }
  m.atol_used = exact ? 0 : atol;
  double dot = 0, ng = 0, nw = 0, sig = 0, noise = 0, sum_abs = 0;
  int64_t finite = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double a = g[i], b = w[i];
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      const bool same = (std::isnan(a) && std::isnan(b)) || (std::isinf(a) && std::isinf(b) && (a > 0) == (b > 0));
      if (!same) ++m.nan_inf_mismatch;
      continue;
    }
    const double d = std::abs(a - b);
    ++finite;
    sum_abs += d;
    m.max_abs = std::max(m.max_abs, d);
    if (b != 0) m.max_rel = std::max(m.max_rel, d / std::abs(b));
    else if (d > 0) m.max_rel = std::numeric_limits<double>::infinity();
    if (exact ? d != 0 : d > atol + tol.rtol * std::abs(b)) ++m.not_close;
    dot += a * b; ng += a * a; nw += b * b;
    sig += b * b; noise += (a - b) * (a - b);
  }
  m.mean_abs = finite ? sum_abs / static_cast<double>(finite) : 0;
  if (ng == 0 && nw == 0) m.cosine = 1;
  else if (ng == 0 || nw == 0) m.cosine = 0;
  else m.cosine = dot / (std::sqrt(ng) * std::sqrt(nw));
  m.snr_db = noise == 0 ? std::numeric_limits<double>::infinity()
                        : (sig == 0 ? -std::numeric_limits<double>::infinity() : 10.0 * std::log10(sig / noise));
  const auto& d = want.dims();
  const bool unit_rows = add_row_cosines(g, w, d, m);
  // Top-1 agreement for class scores: float [C] or [N, C] with C > 1 (not unit-norm embeddings).
  if (ir::info(want.dtype()).is_float && (d.size() == 1 || d.size() == 2) && d.back() > 1 && !unit_rows) {
    const int64_t c = d.back(), rows = m.numel / c;
    bool all = true;
    for (int64_t r = 0; r < rows && all; ++r) {
      int64_t ag = 0, aw = 0;
      for (int64_t j = 1; j < c; ++j) {
        if (g[static_cast<size_t>(r * c + j)] > g[static_cast<size_t>(r * c + ag)]) ag = j;
        if (w[static_cast<size_t>(r * c + j)] > w[static_cast<size_t>(r * c + aw)]) aw = j;
      }
      all = ag == aw;
    }
    m.top1_agree = all;
  }
  return m;
}

std::optional<int64_t> top1_class(const ir::Tensor& scores) {
  const auto& d = scores.dims();
  const bool shaped = (d.size() == 1 && d[0] >= 2) || (d.size() == 2 && d[0] == 1 && d[1] >= 2);
  if (!shaped || !ir::info(scores.dtype()).is_float || !ir::info(scores.dtype()).computable) return std::nullopt;
  const auto v = as_f64(scores);
  int64_t best = 0;
  for (size_t j = 1; j < v.size(); ++j)
    if (v[j] > v[static_cast<size_t>(best)]) best = static_cast<int64_t>(j);
  return best;
}

TensorMetrics compare_values(const RValue& got, const RValue& want, Tolerance tol) {
  if (got.kind != want.kind) {
    TensorMetrics m;
    m.comparable = false;
    m.mismatch = "value kinds differ (tensor/sequence/optional)";
    return m;
  }
  if (want.kind == RValue::Kind::None) return TensorMetrics{};
  if (want.kind == RValue::Kind::Tensor) return compare_tensors(got.tensor, want.tensor, tol);
  if (got.seq.size() != want.seq.size()) {
    TensorMetrics m;
    m.comparable = false;
    m.mismatch = "sequence length " + std::to_string(got.seq.size()) + " vs expected " + std::to_string(want.seq.size());
    return m;
  }
  TensorMetrics total = identical_metrics();
  for (size_t i = 0; i < want.seq.size(); ++i) {
    TensorMetrics m = compare_tensors(got.seq[i], want.seq[i], tol);
    if (!m.comparable) return m;
    accumulate_metrics(total, m);
  }
  return total;
}

TensorMetrics identical_metrics() {
  TensorMetrics m;
  m.snr_db = std::numeric_limits<double>::infinity();
  return m;
}

void accumulate_metrics(TensorMetrics& total, const TensorMetrics& e) {
  if (!e.comparable) {
    total.comparable = false;
    if (total.mismatch.empty()) total.mismatch = e.mismatch;
  }
  const int64_t n = total.numel + e.numel;
  if (n > 0)
    total.mean_abs = (total.mean_abs * static_cast<double>(total.numel) + e.mean_abs * static_cast<double>(e.numel)) /
                     static_cast<double>(n);
  total.numel = n;
  total.not_close += e.not_close;
  total.nan_inf_mismatch += e.nan_inf_mismatch;
  total.max_abs = std::max(total.max_abs, e.max_abs);
  total.max_rel = std::max(total.max_rel, e.max_rel);
  total.atol_used = std::max(total.atol_used, e.atol_used);
  total.cosine = std::min(total.cosine, e.cosine);
  total.snr_db = std::min(total.snr_db, e.snr_db);
  total.rows += e.rows;
  total.row_cosine_sum += e.row_cosine_sum;
  total.row_cosine_min = std::min(total.row_cosine_min, e.row_cosine_min);
}

}  // namespace mcc::backends
