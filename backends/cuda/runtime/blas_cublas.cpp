// blas.h on cuBLAS: one handle bound to the backend's stream. cuBLAS is column-major, so the
// row-major product C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T (operands swapped, each
// row-major matrix read as its column-major transpose with the same leading dimension).
// F32 computes in fp32 (CUBLAS_COMPUTE_32F: no TF32); F16 reads and writes fp16 and accumulates
// in fp32 on the tensor cores.
// cuBLAS is opened with dlopen on the first GEMM, not linked: loading libcublasLt maps and
// relocates ~150 MB, which every command would otherwise pay even when it never touches a GPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>

#include "backends/cuda/runtime/blas.h"
#include "ir/errors.h"

namespace mcc::cuda {

cudaStream_t launch_stream();  // device_api_cuda.cpp (declared for .cu files in launch.h)

namespace {

#define MCC_STR2(x) #x
#define MCC_STR(x) MCC_STR2(x)

/// The cuBLAS entry points mcc calls, resolved from the library opened at run time.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  // The C entry point (C++ also sees an inline overload of the same name, hence no decltype).
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                            const void*, const void*, cudaDataType, int, long long int,
                                            const void*, cudaDataType, int, long long int, const void*, void*,
                                            cudaDataType, int, long long int, int, cublasComputeType_t,
                                            cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

const CublasApi& api() {
  static CublasApi a;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    // The soname of the toolkit built against (the loader's search path), the same file in the
    // toolkit's library folder found at build time, then the unversioned name.
#ifndef MCC_CUBLAS_DIR
#define MCC_CUBLAS_DIR "/usr/local/cuda/lib64"
#endif
    const char* names[] = {"libcublas.so." MCC_STR(CUBLAS_VER_MAJOR),
                           MCC_CUBLAS_DIR "/libcublas.so." MCC_STR(CUBLAS_VER_MAJOR), "libcublas.so"};
    void* lib = nullptr;
    for (const char* n : names)
      if ((lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      const char* why = dlerror();
      error = std::string("cublas: cannot load libcublas.so." MCC_STR(CUBLAS_VER_MAJOR) ": ") + (why ? why : "not found");
      return;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && error.empty()) error = std::string("cublas: libcublas has no symbol ") + name;
    };
    sym(a.create, "cublasCreate_v2");
    sym(a.set_stream, "cublasSetStream_v2");
    sym(a.set_math_mode, "cublasSetMathMode");
    sym(a.gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
    sym(a.status_string, "cublasGetStatusString");
  });
  if (!error.empty()) throw BackendError(error);
  return a;
}

void check(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw BackendError(std::string("cublas: ") + call + " failed: " + api().status_string(st));
}

cublasHandle_t handle() {
  static cublasHandle_t h = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    const CublasApi& a = api();
    check(a.create(&h), "cublasCreate");
    check(a.set_stream(h, launch_stream()), "cublasSetStream");
    check(a.set_math_mode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
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
  check(api().gemm_strided_batched_ex(handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   to_int(n, "n"), to_int(m, "m"), to_int(k, "k"), &alpha,
                                   b, dt, to_int(ldb, "ldb"), stride_b,
                                   a, dt, to_int(lda, "lda"), stride_a, &beta,
                                   c, dt, to_int(ldc, "ldc"), stride_c, to_int(batch, "batch"),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

}  // namespace mcc::cuda
