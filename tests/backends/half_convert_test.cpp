// Bulk f16 <-> f32 conversion gives the bits of the scalar conversion for every f16 value (a
// signalling NaN comes out quiet) and for float values around every rounding boundary, at every
// length (vector body and scalar tail).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu/kernels/half_convert.h"

using mcc::f16;
using mcc::backends::cpu::f16_to_f32;
using mcc::backends::cpu::f32_to_f16;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST_CASE("half_convert: every f16 widens to the scalar conversion's float; signalling NaNs come out quiet") {
  std::vector<f16> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = Eigen::numext::bit_cast<f16>(static_cast<uint16_t>(i));
  std::vector<float> wide(all.size());
  f16_to_f32(all.data(), wide.data(), static_cast<int64_t>(all.size()));
  int64_t differ = 0, quieted = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const uint32_t got = bits_of(wide[i]), want = bits_of(static_cast<float>(all[i]));
    if (got == want) continue;
    // The conversion instructions set a NaN's quiet bit (0x00400000); sign and payload stay.
    if (std::isnan(wide[i]) && (got & ~0x00400000u) == (want & ~0x00400000u)) ++quieted;
    else ++differ;
  }
  CHECK(differ == 0);
  CHECK(quieted <= 1022);  // the signalling NaNs of f16: 0x7c01..0x7dff and 0xfc01..0xfdff
  // Position does not matter: the same value converts to the same bits in the vector body and the tail.
  const f16 snan = Eigen::numext::bit_cast<f16>(static_cast<uint16_t>(0x7d01));
  std::vector<f16> run(19, snan);
  std::vector<float> out(19);
  f16_to_f32(run.data(), out.data(), 19);
  for (float f : out) CHECK(bits_of(f) == bits_of(out[0]));
}

TEST_CASE("half_convert: floats narrow to the scalar conversion's f16 at every length, ties to even") {
  std::mt19937 rng(5);
  std::vector<float> v;
  // Halfway points between neighbouring f16 values (ties), their neighbours, and random magnitudes
  // from subnormal to overflow.
  for (uint16_t h = 0; h < 0x7bff; h += 37) {
    const float a = static_cast<float>(Eigen::numext::bit_cast<f16>(h));
    const float b = static_cast<float>(Eigen::numext::bit_cast<f16>(static_cast<uint16_t>(h + 1)));
    const float mid = (a + b) / 2;
    v.insert(v.end(), {mid, std::nextafter(mid, 0.f), std::nextafter(mid, 1e9f), -mid});
  }
  std::uniform_real_distribution<float> e(-30.f, 18.f);
  for (int i = 0; i < 4000; ++i) v.push_back((i % 2 ? -1.f : 1.f) * std::exp2(e(rng)));
  v.insert(v.end(), {0.f, -0.f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::quiet_NaN(), 65520.f, 65519.f, 1e-8f});
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{33}, static_cast<int64_t>(v.size())}) {
    std::vector<f16> out(static_cast<size_t>(n));
    f32_to_f16(v.data(), out.data(), n);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i)
      differ += Eigen::numext::bit_cast<uint16_t>(out[static_cast<size_t>(i)]) !=
                        Eigen::numext::bit_cast<uint16_t>(f16(v[static_cast<size_t>(i)]))
                    ? 1
                    : 0;
    INFO("n = " << n);
    CHECK(differ == 0);
  }
}
