// Softmax / LogSoftmax (see softmax.h): one block per line, three strided passes (max, sum of
// exponentials, output).
#include "backends/cuda/kernels/softmax.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

template <class T>
void softmax_t(bool log, const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  const int64_t t = (len + 31) / 32 * 32;
  const int threads = static_cast<int>(t < 32 ? 32 : (t > 256 ? 256 : t));
  for_each_block(outer * inner, threads, [=] MCC_DEVICE(BlockCtx c) {
    const int64_t o = c.block / inner, in = c.block - (c.block / inner) * inner;
    const T* xl = x + o * len * inner + in;
    T* yl = y + o * len * inner + in;
    float m = -INFINITY;
    for (int64_t j = c.thread; j < len; j += c.threads) m = fmaxf(m, to_float(xl[j * inner]));
    m = block_max(m, c);
    float s = 0.f;
    for (int64_t j = c.thread; j < len; j += c.threads) s += fast_exp(to_float(xl[j * inner]) - m);
    s = block_sum(s, c);
    if (log) {
      const float ls = logf(s);
      for (int64_t j = c.thread; j < len; j += c.threads) yl[j * inner] = from_float<T>(to_float(xl[j * inner]) - m - ls);
    } else {
      const float inv = 1.f / s;
      for (int64_t j = c.thread; j < len; j += c.threads)
        yl[j * inner] = from_float<T>(fast_exp(to_float(xl[j * inner]) - m) * inv);
    }
  });
}

}  // namespace

void softmax(ElemType type, bool log, const void* x, void* y, int64_t outer, int64_t len, int64_t inner) {
  if (outer * len * inner <= 0) return;
  if (type == ElemType::F16)
    softmax_t(log, static_cast<const half_t*>(x), static_cast<half_t*>(y), outer, len, inner);
  else
    softmax_t(log, static_cast<const float*>(x), static_cast<float*>(y), outer, len, inner);
}

}  // namespace mcc::cuda
