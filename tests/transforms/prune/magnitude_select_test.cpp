// The radix selection of transforms/prune/magnitude_select picks exactly the set a full sort by
// (|w|, tensor position, index) picks, for every float dtype, with heavy ties, zeros of both signs
// and several tensors ranked together.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>

#include "ir/float16.h"
#include "ir/tensor.h"
#include "transforms/prune/magnitude_select.h"

using namespace mcc;
using transforms::prune::count_zeros;
using transforms::prune::mark_smallest;
using transforms::prune::mark_smallest_global;

namespace {

/// Values with many exact ties and both zeros: small integers scaled, random signs.
template <class T>
ir::Tensor tied_tensor(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const float mag = static_cast<float>(rng() % 7) * 0.25f;
    x = static_cast<T>(rng() % 2 ? -mag : mag);
  }
  return ir::Tensor::from_vector<T>({n}, v);
}

double magnitude(const ir::Tensor& t, size_t i) {
  switch (t.dtype()) {
    case ir::DType::F32: return std::fabs(static_cast<double>(t.data<float>()[i]));
    case ir::DType::F64: return std::fabs(t.data<double>()[i]);
    case ir::DType::F16: return std::fabs(static_cast<double>(static_cast<float>(t.data<f16>()[i])));
    default: return std::fabs(static_cast<double>(static_cast<float>(t.data<bf16>()[i])));
  }
}

/// Reference: sort every (magnitude, tensor, index) and take the first k.
std::vector<std::vector<bool>> sorted_selection(const std::vector<const ir::Tensor*>& ts, int64_t k) {
  std::vector<std::tuple<double, size_t, size_t>> all;
  std::vector<std::vector<bool>> masks;
  for (size_t j = 0; j < ts.size(); ++j) {
    masks.emplace_back(static_cast<size_t>(ts[j]->numel()), false);
    for (size_t i = 0; i < static_cast<size_t>(ts[j]->numel()); ++i) all.emplace_back(magnitude(*ts[j], i), j, i);
  }
  std::sort(all.begin(), all.end());
  for (int64_t r = 0; r < k; ++r) masks[std::get<1>(all[static_cast<size_t>(r)])][std::get<2>(all[static_cast<size_t>(r)])] = true;
  return masks;
}

template <class T>
void check_single_dtype(uint32_t seed) {
  const ir::Tensor t = tied_tensor<T>(1000, seed);
  for (int64_t k : {int64_t{1}, int64_t{137}, int64_t{500}, int64_t{999}, int64_t{1000}}) {
    std::vector<bool> mask(1000, false);
    mark_smallest(t, k, mask);
    CHECK(std::count(mask.begin(), mask.end(), true) == k);
    CHECK(mask == sorted_selection({&t}, k)[0]);
  }
}

}  // namespace

TEST_CASE("mark_smallest selects the sort order's first k for f32, f64, f16 and bf16") {
  check_single_dtype<float>(1);
  check_single_dtype<double>(2);
  check_single_dtype<f16>(3);
  check_single_dtype<bf16>(4);
}

TEST_CASE("mark_smallest_global ranks several tensors together, ties by tensor then index") {
  const ir::Tensor a = tied_tensor<float>(300, 5), b = tied_tensor<float>(511, 6), c = tied_tensor<double>(77, 7);
  const std::vector<const ir::Tensor*> ts{&a, &b, &c};
  for (int64_t k : {int64_t{1}, int64_t{444}, int64_t{888}}) {
    std::vector<bool> ma(300, false), mb(511, false), mc(77, false);
    mark_smallest_global(ts, k, {&ma, &mb, &mc});
    const auto want = sorted_selection(ts, k);
    CHECK(ma == want[0]);
    CHECK(mb == want[1]);
    CHECK(mc == want[2]);
  }
}

TEST_CASE("mark_smallest on continuous values and count_zeros on signed zeros") {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(4096);
  for (auto& x : v) x = nd(rng);
  const ir::Tensor t = ir::Tensor::from_vector<float>({64, 64}, v);
  std::vector<bool> mask(4096, false);
  mark_smallest(t, 2048, mask);
  CHECK(mask == sorted_selection({&t}, 2048)[0]);

  const ir::Tensor z = ir::Tensor::from_vector<float>({5}, {0.f, -0.f, 1.f, -2.f, 0.f});
  CHECK(count_zeros(z) == 3);
  const ir::Tensor zh = ir::Tensor::from_vector<f16>({3}, {f16(-0.f), f16(0.5f), f16(0.f)});
  CHECK(count_zeros(zh) == 2);
}
