// AVX-512 epilogue activations (backends/cpu/kernels/conv_act_avx512.h) against f64 references:
// exp_ps, sigmoid_ps and the shorter silu_ps over [-100, 100] and at NaN and the infinities;
// silu_ps_n (N vectors stepped together) gives each vector silu_ps's bits, also without the exp
// clamp on inputs inside it.
// On builds without AVX-512 the header is not compiled and the case says so.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__AVX512F__)
#include "backends/cpu/kernels/conv_act_avx512.h"
#endif

#if defined(__AVX512F__)
namespace {
template <class F>
void eval16(F f, const float* in, float* out) {
  _mm512_storeu_ps(out, f(_mm512_loadu_ps(in)));
}
}  // namespace

TEST_CASE("AVX-512 activations: silu_ps and sigmoid_ps within a few ulp of f64 x / (1 + exp(-x))") {
  using namespace mcc::backends::cpu::avx512;
  double worst_silu = 0, worst_sig = 0;
  float in[16], out[16], sig[16];
  for (int i = -200000; i <= 200000; i += 16) {
    for (int k = 0; k < 16; ++k) in[k] = static_cast<float>(i + k) * 5e-4f;  // [-100, 100]
    eval16([](__m512 v) { return silu_ps(v); }, in, out);
    eval16([](__m512 v) { return sigmoid_ps(v); }, in, sig);
    for (int k = 0; k < 16; ++k) {
      const double x = in[k], s = 1.0 / (1.0 + std::exp(-x)), ref = x * s;
      // Relative error where the result is a normal float; below that, absolute error.
      if (std::abs(ref) >= 1e-30) worst_silu = std::max(worst_silu, std::abs(out[k] - ref) / std::abs(ref));
      else CHECK(std::abs(out[k] - ref) < 1e-30);
      if (s > 1e-30) worst_sig = std::max(worst_sig, std::abs(sig[k] - s) / s);
    }
  }
  CHECK(worst_silu < 4e-7);  // about 3 ulp
  CHECK(worst_sig < 2e-7);
  const float inf = std::numeric_limits<float>::infinity();
  float special[16] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 1e30f, -1e30f, 0.f, -0.f, 88.f,
                       -88.f, 1.f, -1.f, 20.f, -20.f, 3.f, -3.f, 0.5f};
  eval16([](__m512 v) { return silu_ps(v); }, special, out);
  CHECK(std::isnan(out[0]));
  CHECK(out[1] == inf);
  CHECK(out[3] == 1e30f);
  CHECK(std::abs(out[4]) < 1e-6f);  // x * sigmoid(x) -> 0 for large negative x
  CHECK(out[5] == 0.f);
  CHECK(std::abs(out[12]) < 1e-7f);
}

TEST_CASE("AVX-512 activations: silu_ps_n gives every vector the bits of silu_ps") {
  using namespace mcc::backends::cpu::avx512;
  const float inf = std::numeric_limits<float>::infinity();
  float in[8][16], got[8][16], want[16];
  uint32_t seed = 12345;
  int differing = 0;
  for (int round = 0; round < 2000; ++round) {
    __m512 v[8];
    for (int i = 0; i < 8; ++i) {
      for (int k = 0; k < 16; ++k) {
        seed = seed * 1664525u + 1013904223u;
        in[i][k] = (static_cast<float>(seed >> 8) / 16777216.f - 0.5f) * (round % 2 ? 200.f : 30.f);
      }
      v[i] = _mm512_loadu_ps(in[i]);
    }
    if (round == 0) {
      const float special[8] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 1e30f, -1e30f, -0.f, 88.7f, -87.3f};
      for (int k = 0; k < 8; ++k) in[0][k] = special[k];
      v[0] = _mm512_loadu_ps(in[0]);
    }
    silu_ps_n(v);
    for (int i = 0; i < 8; ++i) {
      _mm512_storeu_ps(got[i], v[i]);
      eval16([](__m512 x) { return silu_ps(x); }, in[i], want);
      for (int k = 0; k < 16; ++k) differing += std::memcmp(&got[i][k], &want[k], sizeof(float)) != 0;
    }
  }
  CHECK(differing == 0);
}

TEST_CASE("AVX-512 activations: silu_ps_n without the exp clamp equals silu_ps inside it") {
  using namespace mcc::backends::cpu::avx512;
  float in[8][16], got[8][16], want[16];
  int differing = 0;
  for (int round = 0; round < 500; ++round) {
    __m512 v[8];
    for (int i = 0; i < 8; ++i) {
      for (int k = 0; k < 16; ++k)  // [-87.3, 88.7], edges and NaN included
        in[i][k] = -87.3f + 176.0f * static_cast<float>((round * 128 + i * 16 + k) % 4001) / 4000.f;
      v[i] = _mm512_loadu_ps(in[i]);
    }
    if (round == 0) {
      in[0][0] = -87.3f;
      in[0][1] = 88.7f;
      in[0][2] = std::numeric_limits<float>::quiet_NaN();
      v[0] = _mm512_loadu_ps(in[0]);
    }
    silu_ps_n<8, true>(v);
    for (int i = 0; i < 8; ++i) {
      _mm512_storeu_ps(got[i], v[i]);
      eval16([](__m512 x) { return silu_ps(x); }, in[i], want);
      for (int k = 0; k < 16; ++k) differing += std::memcmp(&got[i][k], &want[k], sizeof(float)) != 0;
    }
  }
  CHECK(differing == 0);
}
#else
TEST_CASE("AVX-512 activations: NOT CHECKED on a build without AVX-512") {
  WARN_MESSAGE(false, "conv_act_avx512.h is only compiled on AVX-512 builds: silu_ps NOT CHECKED");
  CHECK(true);
}
#endif
