// The x86 instruction sets the cpu kernels choose between at run time. Code written for AVX-512
// sits between MCC_AVX512_BEGIN and MCC_AVX512_END (MCC_AVX512_VNNI_* for the int8 kernels,
// MCC_AVX2_* for the F16C conversions): it is compiled for that set in every build, whatever the
// build's -march, and its callers run it only where cpu_avx512() (cpu_avx512_vnni(), ...) says
// the CPU has it, taking their portable paths elsewhere. MCC_CPU_ISA=avx2 turns the AVX-512
// kernels off and MCC_CPU_ISA=eigen every one of them (tests, benchmarks; the same variable caps
// the f32 MatMul kernels, matmul_f32.h); read once.
// Not for other architectures: MCC_X86 is 0 there and only the portable paths are compiled.
#pragma once

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MCC_X86 1
#define MCC_ISA_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define MCC_ISA_BEGIN(targets) \
  MCC_ISA_PRAGMA(clang attribute push(__attribute__((target(targets))), apply_to = function))
#define MCC_ISA_END MCC_ISA_PRAGMA(clang attribute pop)
#else
#define MCC_ISA_BEGIN(targets) MCC_ISA_PRAGMA(GCC push_options) MCC_ISA_PRAGMA(GCC target(targets))
#define MCC_ISA_END MCC_ISA_PRAGMA(GCC pop_options)
#endif
#define MCC_AVX2_TARGETS "avx2,fma,f16c"
#define MCC_AVX512_TARGETS MCC_AVX2_TARGETS ",avx512f,avx512bw,avx512dq,avx512vl"
#define MCC_AVX512_VNNI_TARGETS MCC_AVX512_TARGETS ",avx512vnni,avx512vbmi"
#define MCC_AVX2_BEGIN MCC_ISA_BEGIN(MCC_AVX2_TARGETS)
#define MCC_AVX512_BEGIN MCC_ISA_BEGIN(MCC_AVX512_TARGETS)
#define MCC_AVX512_VNNI_BEGIN MCC_ISA_BEGIN(MCC_AVX512_VNNI_TARGETS)
#define MCC_AVX2_END MCC_ISA_END
#define MCC_AVX512_END MCC_ISA_END
#define MCC_AVX512_VNNI_END MCC_ISA_END
#else
#define MCC_X86 0
#endif

namespace mcc::backends::cpu {

/// AVX2, FMA and F16C.
bool cpu_avx2();
/// AVX-512 F, BW, DQ and VL (with AVX2, FMA and F16C): the f32 kernels.
bool cpu_avx512();
/// cpu_avx512() and AVX-512 VNNI: the int8 GEMM kernels.
bool cpu_avx512_vnni();
/// cpu_avx512_vnni() and AVX-512 VBMI: the int8 channels-in-lanes depthwise kernel.
bool cpu_avx512_vbmi();
/// "avx512-vnni-vbmi", "avx512-vnni", "avx512", "avx2" or "portable": the best of the above.
const char* cpu_kernels_isa();

}  // namespace mcc::backends::cpu
