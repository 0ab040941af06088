// Matrix multiplication for the cuda backend's Gemm, MatMul and Conv kernels, row-major.
// blas_cublas.cpp calls cublasGemmStridedBatchedEx (fp16 inputs use tensor cores with fp32
// accumulation); blas_emulated.cpp computes the same product with Eigen on the host, so the
// emulation build runs the kernels that call it without a GPU.
#pragma once
#include <cstdint>

namespace mcc::cuda {

enum class GemmType { F32, F16 };  // F16: fp16 A, B and C, fp32 accumulation and alpha/beta

/// For b in [0, batch): C_b = alpha * op(A_b) * op(B_b) + beta * C_b, where C_b is m x n with
/// row stride ldc, op(A_b) is m x k, op(B_b) is k x n; op transposes when trans_* is set (A_b is
/// then stored k x m). Row strides lda/ldb are those of A_b/B_b as stored; stride_* (elements)
/// steps between batch items (0 repeats the same matrix). beta == 0 ignores C's contents.
void gemm(GemmType type, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
          float beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch);

}  // namespace mcc::cuda
