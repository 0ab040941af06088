// MaxPool / AveragePool kernels (see pool.h): each thread walks the taps of its window that lie
// inside the input, as the cpu's for_window does.
#include "backends/cuda/kernels/pool.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

/// Taps k of one window dim whose position start + k * dil lies in [lo, hi): [first, last).
MCC_HD inline void tap_range(int64_t start, int64_t dil, int64_t K, int64_t lo, int64_t hi, int64_t& first,
                             int64_t& last) {
  first = start >= lo ? 0 : (lo - start + dil - 1) / dil;
  last = start >= hi ? 0 : (hi - 1 - start) / dil + 1;
  if (last > K) last = K;
  if (first > last) first = last;
}

template <class T>
void pool_t(PoolOp op, const T* x, T* y, int64_t planes, PoolWindow w, bool count_include_pad) {
  const int64_t in_size = w.in[0] * w.in[1] * w.in[2], out_size = w.out[0] * w.out[1] * w.out[2];
  for_each(planes * out_size, [=] MCC_DEVICE(int64_t i) {
    const int64_t plane = i / out_size;
    int64_t r = i - plane * out_size;
    int64_t o[3];
    o[2] = r % w.out[2];
    r /= w.out[2];
    o[1] = r % w.out[1];
    o[0] = r / w.out[1];
    int64_t first[3], last[3], padded = 1;
    for (int j = 0; j < 3; ++j) {
      const int64_t start = o[j] * w.stride[j] - w.pad_b[j];
      int64_t pf, pl;
      tap_range(start, w.dil[j], w.k[j], -w.pad_b[j], w.in[j] + w.pad_e[j], pf, pl);
      padded *= pl - pf;
      tap_range(start, w.dil[j], w.k[j], 0, w.in[j], first[j], last[j]);
      first[j] = start + first[j] * w.dil[j];
      last[j] = start + last[j] * w.dil[j];
    }
    const T* xp = x + plane * in_size;
    float best = -3.402823466e+38f, sum = 0.f;
    int64_t valid = 0;
    for (int64_t id = first[0]; id < last[0]; id += w.dil[0])
      for (int64_t ih = first[1]; ih < last[1]; ih += w.dil[1])
        for (int64_t iw = first[2]; iw < last[2]; iw += w.dil[2]) {
          const float v = to_float(xp[(id * w.in[1] + ih) * w.in[2] + iw]);
          if (valid == 0 || v > best) best = v;
          sum += v;
          ++valid;
        }
    float res;
    if (op == PoolOp::Max) {
      res = best;
    } else {
      const int64_t cnt = count_include_pad ? padded : valid;
      res = cnt > 0 ? sum / static_cast<float>(cnt) : 0.f;
    }
    y[i] = from_float<T>(res);
  });
}

}  // namespace

void pool(PoolOp op, ElemType type, const void* x, void* y, int64_t planes, const PoolWindow& w,
          bool count_include_pad) {
  if (planes * w.out[0] * w.out[1] * w.out[2] <= 0) return;
  if (type == ElemType::F16)
    pool_t(op, static_cast<const half_t*>(x), static_cast<half_t*>(y), planes, w, count_include_pad);
  else
    pool_t(op, static_cast<const float*>(x), static_cast<float*>(y), planes, w, count_include_pad);
}

}  // namespace mcc::cuda
