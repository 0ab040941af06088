// im2col for the integer conv kernels: one row of the u8 im2col matrix of a 2-D conv over a
// range of output positions, padding taps reading the x zero point. Any kernel size, stride,
// dilation and pads; the rows are what the GEMM panel packing (interleave4) reads.
#pragma once
#include <cstdint>

#include "backends/cpu/kernels/conv_util.h"

namespace mcc::backends::cpu {

/// Row k (input channel k / kk, tap k % kk of its kk = kh * kw taps) of the im2col matrix of the
/// 2-D conv of geometry g over the input channels at xg (u8 planes of in[1] x in[2]), for output
/// positions [p0, p0 + cnt) (row-major over out[1] x out[2]), into d[0, cnt); taps on padding
/// read xz.
void im2col_u8_row(const WindowGeom& g, int64_t kk, const uint8_t* xg, uint8_t xz, int64_t k, int64_t p0,
                   int64_t cnt, uint8_t* d);

}  // namespace mcc::backends::cpu
