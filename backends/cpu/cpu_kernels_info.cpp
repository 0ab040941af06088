// The cpu backend's kernel instruction sets and the CPU's name (see cpu_kernels_info.h).
#include "backends/cpu/cpu_kernels_info.h"

#include <fstream>

#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/cpu/kernels/matmul_f32.h"

namespace mcc::backends::cpu {
namespace {

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown" : line.substr(start);
  }
  return "unknown";
}

}  // namespace

CpuKernelsInfo cpu_kernels_info() {
  CpuKernelsInfo info;
  info.cpu_model = cpu_model_name();
  info.matmul_f32 = matmul_isa_name(matmul_f32_isa());
  info.kernels = cpu_kernels_isa();
#if defined(__AVX512F__)
  info.build_isa = "avx512";
#elif defined(__AVX2__)
  info.build_isa = "avx2";
#else
  info.build_isa = "baseline";
#endif
  return info;
}

}  // namespace mcc::backends::cpu
