// 16x16 transposes of 4-byte elements in AVX-512 registers, for the batched 2-D Transpose
// (transpose_concat_split.cpp) and the channels-in-lanes depthwise conv (conv_depthwise_c16.cpp),
// which turns 16 channel rows into per-position 16-channel vectors and back.
// Compiled for AVX-512 wherever it is included on x86 (cpu_isa.h): called only where
// cpu_avx512() holds; include it with `#if MCC_X86`.
#pragma once
#include <immintrin.h>

#include "backends/cpu/kernels/cpu_isa.h"

MCC_AVX512_BEGIN
namespace mcc::backends::cpu::avx512 {

/// r[i] (row i, lanes = columns) becomes column i of the 16x16 block: 64 shuffles.
__attribute__((always_inline)) inline void transpose_16x16(__m512i (&r)[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {  // 32-bit interleave of row pairs
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // 64-bit interleave
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // r[4q + k] now holds, in each 128-bit lane L, column 4L + k of rows 4q..4q+3.
  for (int k = 0; k < 4; ++k) {
    const __m512i a = _mm512_shuffle_i32x4(r[k], r[4 + k], 0x88), b = _mm512_shuffle_i32x4(r[k], r[4 + k], 0xDD);
    const __m512i c = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0x88), e = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0xDD);
    // a: lanes 0,2 of rows 0-3 then 4-7; c: the same for rows 8-15.
    t[k + 0] = _mm512_shuffle_i32x4(a, c, 0x88);
    t[k + 8] = _mm512_shuffle_i32x4(a, c, 0xDD);
    t[k + 4] = _mm512_shuffle_i32x4(b, e, 0x88);
    t[k + 12] = _mm512_shuffle_i32x4(b, e, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

}  // namespace mcc::backends::cpu::avx512
MCC_AVX512_END
