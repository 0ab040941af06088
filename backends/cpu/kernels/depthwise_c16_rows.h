// The output-row loop shared by the channels-in-lanes depthwise kernels (conv_depthwise_c16.cpp
// for f32, qdq_depthwise_c16.cpp for u8): which input rows each output row reads from a ring of K
// rows (loaded in order as they are first needed; padding rows read the padding row), and the
// positions waiting in the output buffer, written back to the channel planes 16 at a time over
// the flattened plane.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/cpu_isa.h"
#if MCC_X86
#include "backends/cpu/kernels/transpose_avx512.h"
#endif

namespace mcc::backends::cpu {

/// Calls run.template operator()<K, S>() when p is a 2-D depthwise conv with channel multiplier
/// 1, a 3x3 or 5x5 kernel, equal strides of 1 or 2 and no dilation; false (nothing run) otherwise.
template <class Run>
bool depthwise_c16_dispatch(const ConvProblem& p, Run&& run) {
  const WindowGeom& g = p.g;
  if (g.nd != 2 || g.in[0] != 1 || g.k[0] != 1 || g.dil[1] != 1 || g.dil[2] != 1) return false;
  if (p.m != p.group || p.c != p.group || g.k[1] != g.k[2] || g.stride[1] != g.stride[2]) return false;
  const int64_t k = g.k[1], s = g.stride[1];
  if (k == 3 && s == 1) run.template operator()<3, 1>();
  else if (k == 3 && s == 2) run.template operator()<3, 2>();
  else if (k == 5 && s == 1) run.template operator()<5, 1>();
  else if (k == 5 && s == 2) run.template operator()<5, 2>();
  else return false;
  return true;
}

/// Bands of output rows for a depthwise conv of `items` channel groups on `threads` threads:
/// one band when the groups alone give every thread work, else enough bands (of at least 4
/// rows, each re-reading K - 1 rows above it) for about two items per thread. Every output is
/// computed the same way whatever the bands.
inline int64_t depthwise_row_bands(int64_t items, int64_t OH, int threads) {
  if (threads <= 1 || items >= 2 * threads) return 1;
  return std::max<int64_t>(1, std::min((2 * threads + items - 1) / items, OH / 4));
}

/// For every output row oh in [oh0, oh1) of a 16-channel group: rows[kh] = the ring row of input
/// row oh * S - pt + kh (load_row(h) fills ring slot h % K first) or pad_row; then
/// block.template operator()<N>(rows, ow, out) computes positions [ow, ow + N) (16 floats each,
/// at out + 16 * ow) in blocks of JB and single positions; store_chunk(q, cnt, at) writes
/// positions [16q, 16q + cnt) of obuf to flat positions at + 16q of the planes.
template <int K, int S, int JB, class Elem, class LoadRow, class Block, class StoreChunk>
void depthwise_c16_rows(int64_t H, int64_t oh0, int64_t oh1, int64_t OW, int64_t pt, const Elem* ring,
                        int64_t row_elems, const Elem* pad_row, float* obuf, LoadRow&& load_row,
                        Block&& block, StoreChunk&& store_chunk) {
  int64_t next_h = std::max<int64_t>(0, oh0 * S - pt);  // the next input row to load into the ring
  int64_t pending = 0, done = oh0 * OW;                 // positions waiting in obuf / stored up to
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const Elem* rows[K];
    for (int kh = 0; kh < K; ++kh) {
      const int64_t h = oh * S - pt + kh;
      if (h < 0 || h >= H) {
        rows[kh] = pad_row;
        continue;
      }
      // Rows load in order; row h replaces h - K, which no output from here on reads.
      for (; next_h <= h; ++next_h) load_row(next_h);
      rows[kh] = ring + (h % K) * row_elems;
    }
    float* out = obuf + pending * 16;
    int64_t ow = 0;
    for (; ow + JB <= OW; ow += JB) block.template operator()<JB>(rows, ow, out);
    for (; ow < OW; ++ow) block.template operator()<1>(rows, ow, out);
    pending += OW;
    const int64_t full = pending / 16;
    for (int64_t q = 0; q < full; ++q) store_chunk(q, int64_t{16}, done);
    if (full > 0 && pending % 16 != 0)
      std::memmove(obuf, obuf + full * 256, static_cast<size_t>(pending % 16) * 64);
    done += full * 16;
    pending -= full * 16;
  }
  if (pending > 0) store_chunk(int64_t{0}, pending, done);
}

#if MCC_X86
MCC_AVX512_BEGIN
/// The lowest min(n, 16) lanes.
inline __mmask16 first_lanes(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

/// Columns [0, W) of 16 channel rows turned into per-column 16-channel vectors: load(i, j0, mask)
/// gives lanes [j0, j0 + 16) of row i < nc (masked to the row), rows i >= nc read 0, and
/// store(c, v) takes column c.
template <class Load, class Store>
inline void transpose_channel_rows(int64_t W, int64_t nc, Load&& load, Store&& store) {
  for (int64_t j0 = 0; j0 < W; j0 += 16) {
    const int64_t n = W - j0 < 16 ? W - j0 : 16;
    const __mmask16 m = first_lanes(n);
    __m512i r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = i < nc ? load(i, j0, m) : _mm512_setzero_si512();
    avx512::transpose_16x16(r);
    for (int64_t t = 0; t < n; ++t) store(j0 + t, r[t]);
  }
}

/// The first cnt (<= 16) floats of r[i] (f32 bits, one channel per vector after the transpose
/// back) stored at dst + i * plane for the nc channels of a group.
inline void store_channel_rows_f32(float* dst, int64_t plane, int64_t nc, int64_t cnt, const __m512i (&r)[16]) {
  const __mmask16 m = first_lanes(cnt);
  for (int64_t i = 0; i < nc; ++i, dst += plane) _mm512_mask_storeu_ps(dst, m, _mm512_castsi512_ps(r[i]));
}
MCC_AVX512_END
#endif

}  // namespace mcc::backends::cpu
