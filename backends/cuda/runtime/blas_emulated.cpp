// blas.h for the emulation build: the same row-major strided batched product with Eigen on the
// host. F16 operands are widened to float, multiplied in float and rounded back once, as the
// GPU's fp32 accumulation does. beta == 0 never reads C.
#include <Eigen/Core>

#include "backends/cuda/runtime/blas.h"
#include "ir/float16.h"

namespace mcc::cuda {
namespace {

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstView = Eigen::Map<const RowMajor<T>, 0, Eigen::OuterStride<>>;
template <class T>
using View = Eigen::Map<RowMajor<T>, 0, Eigen::OuterStride<>>;

/// op(X) of a stored matrix as float: rows x cols when not transposed (stored cols x rows else).
template <class T>
RowMajor<float> load(const T* p, bool trans, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t sr = trans ? cols : rows, sc = trans ? rows : cols;
  ConstView<T> stored(p, sr, sc, Eigen::OuterStride<>(std::max<int64_t>(ld, sc)));
  RowMajor<float> f = stored.template cast<float>();
  if (trans) return f.transpose();
  return f;
}

template <class T>
void gemm_one(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const T* a, int64_t lda,
              const T* b, int64_t ldb, float beta, T* c, int64_t ldc) {
  const RowMajor<float> prod = alpha * (load(a, trans_a, m, k, lda) * load(b, trans_b, k, n, ldb));
  View<T> out(c, m, n, Eigen::OuterStride<>(std::max<int64_t>(ldc, n)));
  if (beta == 0.f) out = prod.template cast<T>();
  else out = (prod + beta * out.template cast<float>()).template cast<T>();
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const void* a,
                  int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, float beta, void* c,
                  int64_t ldc, int64_t stride_c, int64_t batch) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* pc = static_cast<T*>(c);
  for (int64_t i = 0; i < batch; ++i)
    gemm_one<T>(trans_a, trans_b, m, n, k, alpha, pa + i * stride_a, lda, pb + i * stride_b, ldb, beta,
                pc + i * stride_c, ldc);
}

}  // namespace

void gemm(GemmType type, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
          float beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (type == GemmType::F16)
    gemm_batched<f16>(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                      batch);
  else
    gemm_batched<float>(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                        stride_c, batch);
}

}  // namespace mcc::cuda
