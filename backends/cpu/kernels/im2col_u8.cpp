// im2col rows of u8 convs (see im2col_u8.h): per output row, the run of x a tap reads (a strided
// gather for stride 2, 32 columns per vpmovwb) between its padding columns; on same-size
// stride-1 maps one contiguous run of the plane per tap, then the padding columns.
#include "backends/cpu/kernels/im2col_u8.h"

#include <algorithm>
#include <cstring>

#ifdef __AVX512BW__
#include <immintrin.h>
#endif

namespace mcc::backends::cpu {

namespace {

// n bytes of value v at d, and n bytes from s to d: inline for the short runs of im2col rows (a
// row of a small map, its one or two padding columns), where a libc call costs more than the copy.
inline void fill_bytes(uint8_t* d, uint8_t v, int64_t n) {
#ifdef __AVX512BW__
  const __m512i vv = _mm512_set1_epi8(static_cast<char>(v));
  for (; n >= 64; n -= 64, d += 64) _mm512_storeu_si512(d, vv);
  if (n > 0) _mm512_mask_storeu_epi8(d, (__mmask64{1} << n) - 1, vv);
#else
  std::memset(d, v, static_cast<size_t>(n));
#endif
}
inline void copy_bytes(uint8_t* d, const uint8_t* s, int64_t n) {
#ifdef __AVX512BW__
  for (; n >= 64; n -= 64, d += 64, s += 64) _mm512_storeu_si512(d, _mm512_loadu_si512(s));
  if (n > 0) {
    const __mmask64 m = (__mmask64{1} << n) - 1;
    _mm512_mask_storeu_epi8(d, m, _mm512_maskz_loadu_epi8(m, s));
  }
#else
  std::memcpy(d, s, static_cast<size_t>(n));
#endif
}

}  // namespace

void im2col_u8_row(const WindowGeom& g, int64_t kk, const uint8_t* xg, uint8_t xz, int64_t k, int64_t p0,
                   int64_t cnt, uint8_t* d) {
  const int64_t H = g.in[1], W = g.in[2], OW = g.out[2], KW = g.k[2];
  const int64_t ci = k / kk, t = k % kk, kh = t / KW, kw = t % KW;
  const uint8_t* xc = xg + ci * H * W;
  const int64_t s = g.stride[2], off = kw * g.dil[2] - g.pad_b[2];
  // ow range whose iw = ow * s + off lies in [0, W)
  const int64_t lo = std::min(OW, off >= 0 ? 0 : (-off + s - 1) / s);
  const int64_t hi = std::max(lo, std::min(OW, W - off <= 0 ? 0 : (W - off + s - 1) / s));
  if (s == 1 && g.stride[1] == 1 && g.dil[1] == 1 && OW == W) {
    // Same-size stride-1 map: output position pos reads plane element pos + delta, so the rows
    // whose ih is inside the plane are one contiguous copy; then the columns that read padding
    // (ow < lo, ow >= hi) and the rows above and below the plane get x_zero.
    const int64_t dh = kh * g.dil[1] - g.pad_b[1], delta = dh * W + off, end = p0 + cnt;
    const int64_t in0 = std::clamp(-dh * W, p0, end), in1 = std::clamp((H - dh) * W, in0, end);
    fill_bytes(d, xz, in0 - p0);
    // Plane elements [in0 + delta, in1 + delta), less what lies outside the plane (border
    // columns only, fixed below).
    const int64_t c0 = std::clamp(-delta, in0, in1), c1 = std::max(c0, std::min(in1, H * W - delta));
    fill_bytes(d + (in0 - p0), xz, c0 - in0);
    copy_bytes(d + (c0 - p0), xc + c0 + delta, c1 - c0);
    fill_bytes(d + (c1 - p0), xz, in1 - c1);
    fill_bytes(d + (in1 - p0), xz, end - in1);
    if (lo > 0 || hi < OW)
      for (int64_t row = in0 - in0 % OW; row < in1; row += OW) {
        const int64_t a0 = std::max(row, in0), a1 = std::min(row + lo, in1);
        if (a1 > a0) fill_bytes(d + (a0 - p0), xz, a1 - a0);
        const int64_t b0 = std::max(row + hi, in0), b1 = std::min(row + OW, in1);
        if (b1 > b0) fill_bytes(d + (b0 - p0), xz, b1 - b0);
      }
    return;
  }
  for (int64_t pos = p0; pos < p0 + cnt;) {
    const int64_t oh = pos / OW, a = pos % OW, b = std::min(OW, a + (p0 + cnt - pos));  // ow in [a, b)
    uint8_t* dr = d + (pos - p0) - a;  // dr[ow]
    pos += b - a;
    const int64_t ih = oh * g.stride[1] - g.pad_b[1] + kh * g.dil[1];
    if (ih < 0 || ih >= H) {
      fill_bytes(dr + a, xz, b - a);
      continue;
    }
    const uint8_t* xr = xc + ih * W + off;
    const int64_t l = std::clamp(lo, a, b), h = std::clamp(hi, l, b);
    fill_bytes(dr + a, xz, l - a);
    int64_t ow = l;
    if (s == 1) {
      copy_bytes(dr + l, xr + l, h - l);
      ow = h;
    }
#ifdef __AVX512BW__
    // Stride 2: the low byte of each 16-bit pair is the even column. The 64-byte load ends one
    // byte past the last column read, which lies inside the row while ow + 33 <= h.
    if (s == 2)
      for (; ow + 33 <= h; ow += 32)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dr + ow), _mm512_cvtepi16_epi8(_mm512_loadu_si512(xr + ow * 2)));
#endif
    for (; ow < h; ++ow) dr[ow] = xr[ow * s];
    fill_bytes(dr + h, xz, b - h);
  }
}

}  // namespace mcc::backends::cpu
