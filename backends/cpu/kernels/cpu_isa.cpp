// Run-time instruction-set checks for the cpu kernels (see cpu_isa.h): cpuid through
// __builtin_cpu_supports, capped by MCC_CPU_ISA, each answer computed once.
#include "backends/cpu/kernels/cpu_isa.h"

#if MCC_X86
#include <cpuid.h>
#endif

#include <cstdlib>
#include <string>

namespace mcc::backends::cpu {
namespace {

struct Isa {
  bool avx2 = false, avx512 = false, vnni = false, vbmi = false;
};

Isa detect() {
  Isa isa;
#if MCC_X86
  __builtin_cpu_init();
  // F16C through cpuid leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know it.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
  isa.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  isa.avx512 = isa.avx2 && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
  isa.vnni = isa.avx512 && __builtin_cpu_supports("avx512vnni");
  isa.vbmi = isa.vnni && __builtin_cpu_supports("avx512vbmi");
  if (const char* e = std::getenv("MCC_CPU_ISA")) {
    const std::string cap = e;
    if (cap == "avx2" || cap == "eigen") isa.avx512 = isa.vnni = isa.vbmi = false;
    if (cap == "eigen") isa.avx2 = false;
  }
#endif
  return isa;
}

const Isa& isa() {
  static const Isa found = detect();
  return found;
}

}  // namespace

bool cpu_avx2() { return isa().avx2; }
bool cpu_avx512() { return isa().avx512; }
bool cpu_avx512_vnni() { return isa().vnni; }
bool cpu_avx512_vbmi() { return isa().vbmi; }

const char* cpu_kernels_isa() {
  if (isa().vbmi) return "avx512-vnni-vbmi";
  if (isa().vnni) return "avx512-vnni";
  if (isa().avx512) return "avx512";
  if (isa().avx2) return "avx2";
  return "portable";
}

}  // namespace mcc::backends::cpu
