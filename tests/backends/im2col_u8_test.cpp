// im2col_u8_row (backends/cpu/kernels/im2col_u8.cpp) against the definition, over kernel sizes,
// strides, dilations, pads and every split of the output positions into chunks, with guard
// bytes after each row: a chunk that ends inside a padding stretch once wrote past its row (and
// crashed builds without AVX-512 through a negative memset length).
#include <doctest/doctest.h>

#include <vector>

#include "backends/cpu/kernels/im2col_u8.h"

using namespace mcc::backends::cpu;

namespace {

uint8_t expected(const WindowGeom& g, int64_t kk, const std::vector<uint8_t>& x, uint8_t xz, int64_t k, int64_t pos) {
  const int64_t H = g.in[1], W = g.in[2], KW = g.k[2];
  const int64_t ci = k / kk, t = k % kk, kh = t / KW, kw = t % KW;
  const int64_t oh = pos / g.out[2], ow = pos % g.out[2];
  const int64_t ih = oh * g.stride[1] - g.pad_b[1] + kh * g.dil[1], iw = ow * g.stride[2] - g.pad_b[2] + kw * g.dil[2];
  if (ih < 0 || ih >= H || iw < 0 || iw >= W) return xz;
  return x[static_cast<size_t>(ci * H * W + ih * W + iw)];
}

}  // namespace

TEST_CASE("im2col_u8_row: every tap of every chunk matches the definition and stays in its row") {
  struct Case { int64_t h, w, kh, kw, s, d, pad; };
  const Case cases[] = {{5, 7, 3, 3, 1, 1, 1}, {6, 6, 3, 3, 1, 1, 1}, {4, 9, 1, 3, 1, 1, 1}, {7, 5, 3, 1, 1, 1, 1},
                        {8, 8, 3, 3, 2, 1, 1}, {9, 70, 3, 3, 2, 1, 1}, {6, 6, 3, 3, 1, 2, 2}, {5, 5, 5, 5, 1, 1, 2},
                        {3, 4, 3, 3, 1, 1, 0}, {4, 4, 2, 2, 1, 1, 0}};
  const uint8_t xz = 7, guard = 0xA5;
  for (const Case& c : cases) {
    WindowGeom g;
    g.nd = 2;
    g.in = {1, c.h, c.w};
    g.k = {1, c.kh, c.kw};
    g.stride = {1, c.s, c.s};
    g.dil = {1, c.d, c.d};
    g.pad_b = g.pad_e = {0, c.pad, c.pad};
    g.out = {1, (c.h + 2 * c.pad - c.d * (c.kh - 1) - 1) / c.s + 1, (c.w + 2 * c.pad - c.d * (c.kw - 1) - 1) / c.s + 1};
    const int64_t kk = c.kh * c.kw, channels = 2, P = g.out[1] * g.out[2];
    std::vector<uint8_t> x(static_cast<size_t>(channels * c.h * c.w));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(11 + (i * 37) % 200);
    int64_t mismatches = 0, overruns = 0;
    for (int64_t k = 0; k < channels * kk; ++k)
      for (int64_t p0 = 0; p0 < P; ++p0)
        for (int64_t cnt = 1; p0 + cnt <= P; ++cnt) {
          std::vector<uint8_t> d(static_cast<size_t>(cnt + 64), guard);
          im2col_u8_row(g, kk, x.data(), xz, k, p0, cnt, d.data());
          for (int64_t i = 0; i < cnt; ++i) mismatches += d[static_cast<size_t>(i)] != expected(g, kk, x, xz, k, p0 + i);
          for (int64_t i = cnt; i < cnt + 64; ++i) overruns += d[static_cast<size_t>(i)] != guard;
        }
    CAPTURE(c.h);
    CAPTURE(c.w);
    CAPTURE(c.kh);
    CAPTURE(c.kw);
    CAPTURE(c.s);
    CAPTURE(c.d);
    CAPTURE(c.pad);
    CHECK(mismatches == 0);
    CHECK(overruns == 0);
  }
}
