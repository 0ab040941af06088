// Perplexity, next-token agreement, KL and masked positions of sequence outputs (see
// sequence_metrics.h).
#include "judge/sequence_metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ir/errors.h"
#include "ir/output_names.h"

namespace mcc::judge {
namespace {

/// A mask's or token ids' values as int64, converted once through ir::dispatch (a float mask
/// counts any non-zero value as 1).
std::vector<int64_t> int_values(const ir::Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  ir::dispatch<MCC_ALL_DTYPES>(t.dtype(), "a sequence input", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto d = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_integral_v<T>) v[i] = static_cast<int64_t>(d[i]);  // bool too
      else v[i] = static_cast<float>(d[i]) != 0.0f ? 1 : 0;
    }
  });
  return v;
}

/// Masks come as integers, bool or float32.
bool mask_dtype(ir::DType dt) { return ir::info(dt).is_int || dt == ir::DType::Bool || dt == ir::DType::F32; }

bool leading_dims_match(const ir::Tensor& out, const ir::Tensor& bt) {
  return bt.defined() && bt.rank() == 2 && out.rank() >= 2 && out.dims()[0] == bt.dims()[0] &&
         out.dims()[1] == bt.dims()[1];
}

/// log-softmax of row x[0..v) into out (double), returns nothing; max-shifted.
void log_softmax(const float* x, int64_t v, std::vector<double>& out) {
  out.resize(static_cast<size_t>(v));
  double mx = -INFINITY;
  for (int64_t i = 0; i < v; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  double s = 0;
  for (int64_t i = 0; i < v; ++i) s += std::exp(static_cast<double>(x[i]) - mx);
  const double lse = mx + std::log(s);
  for (int64_t i = 0; i < v; ++i) out[static_cast<size_t>(i)] = static_cast<double>(x[i]) - lse;
}

int64_t argmax(const float* x, int64_t v) { return std::max_element(x, x + v) - x; }

}  // namespace

SequenceFeeds sequence_feeds(const std::vector<std::pair<std::string, ir::Tensor>>& feeds) {
  SequenceFeeds f;
  for (const auto& [name, t] : feeds) {
    if (name == "input_ids" && t.rank() == 2 && (t.dtype() == ir::DType::I64 || t.dtype() == ir::DType::I32)) f.ids = t;
    if (name == "attention_mask" && t.rank() == 2 && mask_dtype(t.dtype())) f.mask = t;
  }
  if (f.ids.defined() && f.mask.defined() && f.ids.dims() != f.mask.dims()) f.mask = ir::Tensor();
  return f;
}

bool is_lm_logits(const std::string& output, const ir::Tensor& out, const SequenceFeeds& f, bool forced) {
  if (!f.ids.defined() || out.dtype() != ir::DType::F32 || out.rank() != 3 || !leading_dims_match(out, f.ids)) return false;
  const int64_t v = out.dims()[2];
  if (v < 2) return false;
  for (const int64_t id : int_values(f.ids))
    if (id < 0 || id >= v) return false;
  return forced || ir::names_lm_logits(output);
}

std::pair<int64_t, int64_t> mask_counts(const ir::Tensor& mask) {
  const auto m = int_values(mask);
  return {static_cast<int64_t>(std::count_if(m.begin(), m.end(), [](int64_t v) { return v != 0; })), mask.numel()};
}

bool is_masked(const ir::Tensor& out, const SequenceFeeds& f) {
  if (!f.mask.defined() || !leading_dims_match(out, f.mask) || out.dtype() == ir::DType::String) return false;
  const auto [k, all] = mask_counts(f.mask);
  return k < all;
}

ir::Tensor unmasked_rows(const ir::Tensor& x, const ir::Tensor& mask) {
  const int64_t positions = mask.numel();
  const auto keep = int_values(mask);
  const size_t row_bytes = x.nbytes() / static_cast<size_t>(std::max<int64_t>(positions, 1));
  std::vector<int64_t> dims(x.dims().begin() + 1, x.dims().end());
  dims[0] = mask_counts(mask).first;
  ir::Tensor out = ir::Tensor::allocate(x.dtype(), dims);
  std::byte* dst = out.mutable_raw();
  const std::byte* src = x.raw();
  for (int64_t p = 0; p < positions; ++p) {
    if (keep[static_cast<size_t>(p)] == 0) continue;
    if (row_bytes) std::memcpy(dst, src + static_cast<size_t>(p) * row_bytes, row_bytes);
    dst += row_bytes;
  }
  return out;
}

void SequenceStats::add(const std::string& output, const ir::Tensor& logits, const ir::Tensor& ref, const SequenceFeeds& f) {
  if (ref.defined() && ref.dims() != logits.dims())
    throw ModelError("output '" + output + "': logits shaped differently from the reference's");
  const int64_t B = logits.dims()[0], T = logits.dims()[1], V = logits.dims()[2];
  const float* x = logits.data<float>().data();
  const float* r = ref.defined() ? ref.data<float>().data() : nullptr;
  const auto ids = int_values(f.ids);
  const auto keep = f.mask.defined() ? int_values(f.mask) : std::vector<int64_t>(ids.size(), 1);
  std::vector<double> lg, lr;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t + 1 < T; ++t) {
      const int64_t pos = b * T + t;
      if (!keep[static_cast<size_t>(pos)] || !keep[static_cast<size_t>(pos + 1)]) continue;
      const int64_t next = ids[static_cast<size_t>(pos + 1)];
      const float* row = x + pos * V;
      log_softmax(row, V, lg);
      const double nll = -lg[static_cast<size_t>(next)];
      nll_.add(nll);
      if (!r) continue;
      const float* rrow = r + pos * V;
      log_softmax(rrow, V, lr);
      const double ref_nll = -lr[static_cast<size_t>(next)];
      ref_nll_.add(ref_nll);
      diff_.add(nll - ref_nll);
      agree_ += argmax(row, V) == argmax(rrow, V) ? 1 : 0;
      double kl = 0;
      for (int64_t i = 0; i < V; ++i) kl += std::exp(lr[static_cast<size_t>(i)]) * (lr[static_cast<size_t>(i)] - lg[static_cast<size_t>(i)]);
      kl_.add(std::max(0.0, kl));
    }
  }
  ++samples_;
}

double SequenceStats::perplexity() const { return std::exp(nll_.mean()); }
Interval SequenceStats::perplexity_interval() const {
  const Interval iv = nll_.interval();
  return {std::exp(iv.lo), std::exp(iv.hi)};
}
double SequenceStats::reference_perplexity() const { return std::exp(ref_nll_.mean()); }
double SequenceStats::perplexity_ratio() const { return std::exp(diff_.mean()); }
Interval SequenceStats::perplexity_ratio_interval() const {
  const Interval iv = diff_.interval();
  return {std::exp(iv.lo), std::exp(iv.hi)};
}
double SequenceStats::token_agreement() const {
  return diff_.n ? static_cast<double>(agree_) / static_cast<double>(diff_.n) : 1.0;
}
Interval SequenceStats::token_agreement_interval() const { return share_interval(agree_, diff_.n); }

}  // namespace mcc::judge
