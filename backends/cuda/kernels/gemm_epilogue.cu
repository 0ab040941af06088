// Bias + activation epilogue and the beta * C broadcast of Gemm (see gemm_epilogue.h). One
// thread per output element; values are read and written in their storage type, computed in f32.
#include "backends/cuda/kernels/gemm_epilogue.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

MCC_DEVICE inline float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

MCC_DEVICE inline float activate(const Activation& a, float v) {
  switch (a.kind) {
    case Activation::Kind::None: return v;
    case Activation::Kind::Relu: return v > 0.f ? v : 0.f;
    case Activation::Kind::Clip: return clampf(v, a.alpha, a.beta);
    case Activation::Kind::Sigmoid: return 1.f / (1.f + fast_exp(-v));
    case Activation::Kind::SiLU: return v / (1.f + fast_exp(-v));
    case Activation::Kind::LeakyRelu: return v < 0.f ? a.alpha * v : v;
    case Activation::Kind::HardSigmoid: return clampf(a.alpha * v + a.beta, 0.f, 1.f);
    case Activation::Kind::HardSwish: return v * clampf(v / 6.f + 0.5f, 0.f, 1.f);
  }
  return v;
}

template <class T>
void bias_activation_t(T* y, int64_t outer, int64_t channels, int64_t inner, const T* bias,
                       Activation act) {
  const int64_t n = outer * channels * inner;
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    float v = to_float(y[i]);
    if (bias) v += to_float(bias[(i / inner) % channels]);
    y[i] = from_float<T>(activate(act, v));
  });
}

template <class T>
void write_scaled_t(T* y, int64_t rows, int64_t cols, const T* c, int64_t rs, int64_t cs,
                    float beta) {
  for_each(rows * cols, [=] MCC_DEVICE(int64_t i) {
    const int64_t r = i / cols, j = i - r * cols;
    y[i] = from_float<T>(beta * to_float(c[r * rs + j * cs]));
  });
}

}  // namespace

void bias_activation(GemmType type, void* y, int64_t outer, int64_t channels, int64_t inner,
                     const void* bias, const Activation& act) {
  if (!bias && act.kind == Activation::Kind::None) return;
  if (type == GemmType::F16)
    bias_activation_t(static_cast<half_t*>(y), outer, channels, inner,
                      static_cast<const half_t*>(bias), act);
  else
    bias_activation_t(static_cast<float*>(y), outer, channels, inner,
                      static_cast<const float*>(bias), act);
}

void write_scaled_broadcast(GemmType type, void* y, int64_t rows, int64_t cols, const void* c,
                            int64_t c_row_stride, int64_t c_col_stride, float beta) {
  if (type == GemmType::F16)
    write_scaled_t(static_cast<half_t*>(y), rows, cols, static_cast<const half_t*>(c),
                   c_row_stride, c_col_stride, beta);
  else
    write_scaled_t(static_cast<float*>(y), rows, cols, static_cast<const float*>(c), c_row_stride,
                   c_col_stride, beta);
}

}  // namespace mcc::cuda
