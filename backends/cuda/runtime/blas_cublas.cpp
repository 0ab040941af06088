// blas.h on cuBLAS: one handle bound to the backend's stream. cuBLAS is column-major, so the
// row-major product C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T (operands swapped, each
// row-major matrix read as its column-major transpose with the same leading dimension).
// F32 computes in fp32 (CUBLAS_COMPUTE_32F: no TF32); F16 reads and writes fp16 and accumulates
// in fp32 on the tensor cores.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <string>

#include "backends/cuda/runtime/blas.h"
#include "ir/errors.h"

namespace mcc::cuda {

cudaStream_t launch_stream();  // device_api_cuda.cpp (declared for .cu files in launch.h)

namespace {

void check(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw BackendError(std::string("cublas: ") + call + " failed: " + cublasGetStatusString(st));
}

cublasHandle_t handle() {
  static cublasHandle_t h = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    check(cublasCreate(&h), "cublasCreate");
    check(cublasSetStream(h, launch_stream()), "cublasSetStream");
    check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  });
  return h;
}

int to_int(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw BackendError(std::string("cublas: gemm ") + what + " " + std::to_string(v) + " is out of cuBLAS's int range");
  return static_cast<int>(v);
}

}  // namespace

void gemm(GemmType type, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
          float beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  // Column-major view: C^T (n x m) = op(B^T) (n x k) * op(A^T) (k x m). Leading dimensions must
  // be at least the column-major row counts even when k == 0 (nothing is read then).
  const int64_t min_ldb = trans_b ? k : n, min_lda = trans_a ? m : k;
  ldb = std::max<int64_t>({ldb, min_ldb, 1});
  lda = std::max<int64_t>({lda, min_lda, 1});
  ldc = std::max<int64_t>({ldc, n, 1});
  const cudaDataType_t dt = type == GemmType::F16 ? CUDA_R_16F : CUDA_R_32F;
  check(cublasGemmStridedBatchedEx(handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   to_int(n, "n"), to_int(m, "m"), to_int(k, "k"), &alpha,
                                   b, dt, to_int(ldb, "ldb"), stride_b,
                                   a, dt, to_int(lda, "lda"), stride_a, &beta,
                                   c, dt, to_int(ldc, "ldc"), stride_c, to_int(batch, "batch"),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

}  // namespace mcc::cuda
