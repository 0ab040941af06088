// vpdpbusd (AVX-512 VNNI: s32 lanes += four u8 x s8 products) for the int8 kernels
// (int8_gemm.cpp, qdq_depthwise_c16.cpp). GCC 12 compiles _mm512_dpbusd_epi32 on accumulator
// arrays with a register copy around every instruction and spills one accumulator of a 4x4 tile
// to the stack on each k step (a store-to-load round trip on the critical path); the inline asm
// form updates the accumulator in place. Other compilers use the intrinsic.
// Compiled for AVX-512 VNNI wherever it is included on x86 (cpu_isa.h): called only where
// cpu_avx512_vnni() holds; include it with `#if MCC_X86`.
#pragma once
#include <immintrin.h>

#include "backends/cpu/kernels/cpu_isa.h"

MCC_AVX512_VNNI_BEGIN
namespace mcc::backends::cpu::avx512 {

/// acc + sum of the four products u8[4i + j] * s8[4i + j] in each s32 lane i (exact, no
/// saturation).
__attribute__((always_inline)) inline __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
#if defined(__GNUC__) && !defined(__clang__)
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
#else
  return _mm512_dpbusd_epi32(acc, u8, s8);
#endif
}

}  // namespace mcc::backends::cpu::avx512
MCC_AVX512_VNNI_END
