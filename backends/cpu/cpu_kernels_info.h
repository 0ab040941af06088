// What the cpu backend's kernels run on here: the CPU's model name and, per kernel family, the
// instruction set in use (chosen at run time, or fixed by the build's -march), for `mcc bench`.
#pragma once
#include <string>

namespace mcc::backends::cpu {

struct CpuKernelsInfo {
  std::string cpu_model;   // /proc/cpuinfo "model name" ("unknown" elsewhere)
  std::string matmul_f32;  // avx512 | avx2 | eigen: chosen at run time (MCC_CPU_ISA overrides)
  std::string kernels;     // the conv, pool, norm, transpose, f16 and int8 GEMM kernels' set,
                           // chosen at run time (cpu_kernels_isa(): avx512-vnni-vbmi ... portable)
  std::string build_isa;   // avx512 | avx2 | baseline: what -march gave the rest (the int8 QDQ
                           // conv epilogues, the per-plane depthwise and u8 im2col kernels)
};

CpuKernelsInfo cpu_kernels_info();

}  // namespace mcc::backends::cpu
