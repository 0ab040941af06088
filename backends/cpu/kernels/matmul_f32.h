// f32 GEMM with B packed into 32-column panels, for MatMul (matmul_f32.cpp): AVX-512 or AVX2+FMA
// kernels chosen at run time by the CPU. Where neither runs, matmul_f32_available() is false and
// callers keep Eigen's GEMM.
#pragma once
#include <cstdint>
#include <vector>

#include "backends/backend.h"

namespace mcc::backends::cpu {

/// B[K, N] (row-major) as panels of 32 columns, each panel K rows of 32 contiguous floats,
/// the last panel zero-padded.
struct PackedB {
  int64_t K = 0, N = 0;
  std::vector<float> data;
};

/// The kernels' instruction set: the best the CPU has, or MCC_CPU_ISA=avx2|eigen (read once) to
/// take a lesser one; the two instruction sets give the same bits.
enum class MatmulIsa { Eigen, Avx2, Avx512 };
MatmulIsa matmul_f32_isa();
const char* matmul_isa_name(MatmulIsa isa);
/// Switches the instruction set (tests, benchmarks); false, and no change, when the CPU lacks it.
bool matmul_f32_use_isa(MatmulIsa isa);

/// True when a packed kernel runs here (matmul_f32_isa() is not Eigen).
bool matmul_f32_available();

/// Packs B (row stride ldb) into `out`.
void pack_b_f32(const float* B, int64_t ldb, int64_t K, int64_t N, PackedB& out);

/// C[M, N] = A[M, K] * B (row strides lda, ldc). Each output is summed over k in order by one
/// thread, so results do not depend on the thread count. Parallel over column panels, or over
/// row tiles when there are fewer panels than threads; `parallel` false runs on the caller only.
void matmul_packed_f32(const KernelContext& ctx, int64_t M, const float* A, int64_t lda,
                       const PackedB& B, float* C, int64_t ldc, bool parallel = true);

}  // namespace mcc::backends::cpu
