// calibration: streaming statistics (order- and chunk-independent, bounded memory) and the four
// range methods on known distributions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "transforms/quantize/calibration.h"

using namespace mcc;
using transforms::quantize::CalibMethod;
using transforms::quantize::RangeSpec;
using transforms::quantize::TensorStats;

namespace {

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TensorStats stats_of(const std::vector<float>& v, size_t chunk = 0) {
  TensorStats s;
  if (!chunk) chunk = v.size();
  for (size_t i = 0; i < v.size(); i += chunk) s.add(v.data() + i, std::min(chunk, v.size() - i));
  return s;
}

}  // namespace

TEST_CASE("calibration: minmax is the exact range, widened to include zero") {
  const std::vector<float> v{0.5f, 2.25f, 1.f, 0.75f};
  const TensorStats s = stats_of(v);
  CHECK(s.min() == 0.5);
  CHECK(s.max() == 2.25);
  const auto [lo, hi] = transforms::quantize::compute_range(s, RangeSpec{});
  CHECK(lo == 0.0);
  CHECK(hi == 2.25);
  const auto [slo, shi] = transforms::quantize::compute_range(stats_of({-3.f, 1.f}), RangeSpec{CalibMethod::MinMax, 99.99, true, 8});
  CHECK(slo == -3.0);
  CHECK(shi == 3.0);
}

TEST_CASE("calibration: statistics do not depend on sample order or chunking") {
  // Values spanning many binades, so the histogram range grows several times while streaming.
  std::vector<float> v = gaussian(20000, 3, 0.01f);
  for (int i = 0; i < 50; ++i) v.push_back(std::ldexp(1.f, i % 12) * (i % 2 ? 1.f : -1.f));
  std::vector<float> rev(v.rbegin(), v.rend());
  std::vector<float> shuffled = v;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(9));
  const TensorStats a = stats_of(v), b = stats_of(rev, 7), c = stats_of(shuffled, 1000);
  CHECK(a == b);
  CHECK(a == c);
  // merge() of chunk statistics equals adding everything to one object.
  TensorStats m;
  for (size_t i = 0; i < shuffled.size(); i += 3333) {
    TensorStats part;
    part.add(shuffled.data() + i, std::min<size_t>(3333, shuffled.size() - i));
    m.merge(part);
  }
  CHECK(m == a);
  for (auto method : {CalibMethod::MinMax, CalibMethod::Percentile, CalibMethod::Entropy, CalibMethod::Mse}) {
    const RangeSpec spec{method, 99.9, false, 8};
    CHECK(transforms::quantize::compute_range(a, spec) == transforms::quantize::compute_range(c, spec));
  }
}

TEST_CASE("calibration: memory does not grow with the number of values") {
  TensorStats s;
  const auto chunk = gaussian(4096, 1);
  s.add(chunk.data(), chunk.size());
  const size_t first = s.memory_bytes();
  for (int i = 0; i < 200; ++i) {
    auto more = gaussian(4096, 100 + i, 1.f + i);  // growing range: re-binning, not resizing
    s.add(more.data(), more.size());
  }
  CHECK(s.memory_bytes() == first);
  CHECK(s.bins().size() == 2 * TensorStats::kHalfBins);
  CHECK(s.count() == 4096 * 201);
}

TEST_CASE("calibration: non-finite values are counted and left out") {
  const std::vector<float> v{1.f, NAN, -2.f, INFINITY};
  const TensorStats s = stats_of(v);
  CHECK(s.count() == 2);
  CHECK(s.nonfinite() == 2);
  CHECK(s.min() == -2.0);
  CHECK(s.max() == 1.0);
}

TEST_CASE("calibration: percentile of a uniform distribution") {
  std::vector<float> v(100000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = -1.f + 2.f * static_cast<float>(i) / static_cast<float>(v.size());
  const TensorStats s = stats_of(v);
  const auto [lo, hi] = transforms::quantize::compute_range(s, RangeSpec{CalibMethod::Percentile, 99.0, true, 8});
  CHECK(hi == doctest::Approx(0.99).epsilon(0.01));
  CHECK(lo == -hi);
  const auto [alo, ahi] = transforms::quantize::compute_range(s, RangeSpec{CalibMethod::Percentile, 99.0, false, 8});
  CHECK(alo == doctest::Approx(-0.98).epsilon(0.01));  // 1st percentile
  CHECK(ahi == doctest::Approx(0.98).epsilon(0.01));   // 99th percentile
}

TEST_CASE("calibration: entropy and mse clip rare outliers of a gaussian") {
  std::vector<float> v = gaussian(200000, 5);
  v.push_back(40.f);  // one outlier far out: minmax follows it, entropy and mse must not
  const TensorStats s = stats_of(v);
  const auto mm = transforms::quantize::compute_range(s, RangeSpec{CalibMethod::MinMax, 99.99, true, 8});
  CHECK(mm.second == 40.0);
  const auto kl = transforms::quantize::compute_range(s, RangeSpec{CalibMethod::Entropy, 99.99, true, 8});
  CHECK(kl.second > 2.0);
  CHECK(kl.second < 8.0);
  // MSE weighs the outlier's squared clipping error against the rounding error of 200k values:
  // it clips, but less than KL (at ~t = 20, both terms are ~400).
  const auto mse = transforms::quantize::compute_range(s, RangeSpec{CalibMethod::Mse, 99.99, true, 8});
  CHECK(mse.second > kl.second);
  CHECK(mse.second < 30.0);
  // Without the outlier, mse clips the gaussian's own sparse tail (t below max |x|).
  std::vector<float> body(v.begin(), v.end() - 1);
  const TensorStats sb = stats_of(body);
  const auto mse_body = transforms::quantize::compute_range(sb, RangeSpec{CalibMethod::Mse, 99.99, true, 8});
  CHECK(mse_body.second < std::max(-sb.min(), sb.max()));
  CHECK(mse_body.second > 2.0);
  // Non-negative data quantized asymmetrically: the range starts at 0.
  std::vector<float> relu;
  for (float x : v) relu.push_back(std::max(x, 0.f));
  const auto r = transforms::quantize::compute_range(stats_of(relu), RangeSpec{CalibMethod::Entropy, 99.99, false, 8});
  CHECK(r.first == 0.0);
  CHECK(r.second <= 8.0);
}

TEST_CASE("calibration: sha256 matches the FIPS 180-4 test vectors") {
  CHECK(transforms::quantize::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(transforms::quantize::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(transforms::quantize::sha256_hex(std::string(1000, 'a')).size() == 64);
}

TEST_CASE("calibration: unknown method is a usage error") {
  CHECK_THROWS_AS(transforms::quantize::parse_calib_method("kl"), UsageError);
  CHECK(transforms::quantize::parse_calib_method("entropy") == CalibMethod::Entropy);
}
