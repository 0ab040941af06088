// Radix selection of the smallest-magnitude weights (see transforms/prune/magnitude_select.h).
#include "transforms/prune/magnitude_select.h"

#include <array>
#include <cmath>
#include <cstring>

#include "ir/errors.h"
#include "ir/float16.h"

namespace mcc::transforms::prune {
namespace {

constexpr int kDigitBits = 16;
constexpr size_t kBuckets = size_t{1} << kDigitBits;

/// Calls f(index, key) for every element of t, key = bits of |w| (see the header); `wide`: the
/// float64 bits for every dtype, so that tensors of f64 and narrower types rank together.
template <class F>
void for_each_key(const ir::Tensor& t, bool wide, F&& f) {
  auto float_keys = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto d = t.data<T>();
    for (size_t i = 0; i < d.size(); ++i) {
      const float a = std::fabs(static_cast<float>(d[i]));
      if (wide) {
        const double w = a;
        uint64_t bits;
        std::memcpy(&bits, &w, sizeof bits);
        f(i, bits);
      } else {
        uint32_t bits;
        std::memcpy(&bits, &a, sizeof bits);
        f(i, static_cast<uint64_t>(bits));
      }
    }
  };
  switch (t.dtype()) {
    case ir::DType::F32: float_keys(ir::TypeTag<float>{}); break;
    case ir::DType::F16: float_keys(ir::TypeTag<mcc::f16>{}); break;
    case ir::DType::BF16: float_keys(ir::TypeTag<mcc::bf16>{}); break;
    case ir::DType::F64: {
      const auto d = t.data<double>();
      for (size_t i = 0; i < d.size(); ++i) {
        const double a = std::fabs(d[i]);
        uint64_t bits;
        std::memcpy(&bits, &a, sizeof bits);
        f(i, bits);
      }
      break;
    }
    default: throw InternalError("prune: magnitude ranking of a " + ir::dtype_name(t.dtype()) + " tensor");
  }
}

int key_bits(const std::vector<const ir::Tensor*>& ts) {
  for (const ir::Tensor* t : ts)
    if (t->dtype() == ir::DType::F64) return 64;
  return 32;
}

/// The threshold key T and the number of elements equal to T that complete the k smallest.
struct Threshold {
  uint64_t key = 0;
  int64_t ties = 0;
};

Threshold find_threshold(const std::vector<const ir::Tensor*>& ts, int64_t k) {
  const int bits = key_bits(ts);
  uint64_t prefix = 0;
  int64_t remaining = k;
  std::vector<int64_t> hist(kBuckets);
  for (int shift = bits - kDigitBits; shift >= 0; shift -= kDigitBits) {
    std::fill(hist.begin(), hist.end(), 0);
    const int known = bits - kDigitBits - shift;  // bits above this digit already fixed
    for (const ir::Tensor* t : ts)
      for_each_key(*t, bits == 64, [&](size_t, uint64_t key) {
        if (known == 0 || (key >> (shift + kDigitBits)) == prefix) ++hist[(key >> shift) & (kBuckets - 1)];
      });
    size_t d = 0;
    while (d + 1 < kBuckets && remaining > hist[d]) remaining -= hist[d++];
    prefix = (prefix << kDigitBits) | d;
  }
  return {prefix, remaining};
}

void mark(const std::vector<const ir::Tensor*>& ts, const Threshold& th, const std::vector<std::vector<bool>*>& masks) {
  const bool wide = key_bits(ts) == 64;
  int64_t ties = th.ties;
  for (size_t j = 0; j < ts.size(); ++j) {
    std::vector<bool>& m = *masks[j];
    for_each_key(*ts[j], wide, [&](size_t i, uint64_t key) {
      if (key < th.key) m[i] = true;
      else if (key == th.key && ties > 0) m[i] = true, --ties;
    });
  }
}

}  // namespace

void mark_smallest_global(const std::vector<const ir::Tensor*>& tensors, int64_t k,
                          const std::vector<std::vector<bool>*>& masks) {
  if (k <= 0) return;
  int64_t n = 0;
  for (const ir::Tensor* t : tensors) n += t->numel();
  if (k > n) throw InternalError("prune: asked for " + std::to_string(k) + " of " + std::to_string(n) + " weights");
  mark(tensors, find_threshold(tensors, k), masks);
}

void mark_smallest(const ir::Tensor& t, int64_t k, std::vector<bool>& mask) {
  mark_smallest_global({&t}, k, {&mask});
}

int64_t count_zeros(const ir::Tensor& t) {
  int64_t z = 0;
  for_each_key(t, false, [&](size_t, uint64_t key) { z += key == 0; });
  return z;
}

}  // namespace mcc::transforms::prune
