// The launch layer every cuda kernel body is written against, in two builds of the same source:
// - CUDA (nvcc): for_each / for_each_block launch a grid on the backend's one stream; block_sum /
//   block_max reduce across the threads of a block through warp shuffles and shared memory.
// - Emulation (MCC_CUDA_EMULATION, the host C++ compiler; CI has no GPU): the grid runs on the
//   host. for_each is a loop; for_each_block runs every block with a single thread, so a kernel's
//   block-strided loops cover the whole row and block_sum / block_max return their argument.
// Kernel bodies may cooperate inside a block only through block_sum / block_max (no other shared
// memory, no __syncthreads), which keeps them correct under both builds.
// Only .cu files include this header.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(MCC_CUDA_EMULATION)
#include <cmath>
#define MCC_HD
#define MCC_DEVICE
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define MCC_HD __host__ __device__
#define MCC_DEVICE __device__
#endif

namespace mcc::cuda {

// ---------------------------------------------------------------- half precision
#if defined(MCC_CUDA_EMULATION)
/// IEEE binary16 bits; arithmetic is done in float (to_float / from_float).
struct half_t {
  uint16_t bits;
};
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);  // round to nearest even, as __float2half_rn
inline float to_float(half_t h) { return half_to_float(h.bits); }
template <class T>
inline T from_float(float f) {
  if constexpr (sizeof(T) == 2 && !std::is_integral_v<T>) return half_t{float_to_half(f)};
  else return static_cast<T>(f);
}
#else
using half_t = __half;
MCC_HD inline float to_float(half_t h) { return __half2float(h); }
template <class T>
MCC_HD inline T from_float(float f) {
  if constexpr (sizeof(T) == 2 && !std::is_integral_v<T>) return __float2half_rn(f);
  else return static_cast<T>(f);
}
#endif
MCC_HD inline float to_float(float f) { return f; }
MCC_HD inline float to_float(double f) { return static_cast<float>(f); }

// ---------------------------------------------------------------- launching
/// Where a block-level kernel body runs: block index, this thread's index in the block, and the
/// block's thread count (1 under emulation).
struct BlockCtx {
  int64_t block;
  int thread;
  int threads;
};

#if defined(MCC_CUDA_EMULATION)
/// Runs f(i) for every i in [0, n).
template <class F>
void for_each(int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) f(i);
}
/// Runs f(ctx) for every block in [0, blocks); `threads` is the CUDA block size (ignored here).
template <class F>
void for_each_block(int64_t blocks, int threads, F f) {
  (void)threads;
  for (int64_t b = 0; b < blocks; ++b) f(BlockCtx{b, 0, 1});
}
inline float block_sum(float v, const BlockCtx&) { return v; }
inline float block_max(float v, const BlockCtx&) { return v; }
inline float fast_exp(float x) { return std::exp(x); }
#else
/// The backend's stream (device_api_cuda.cpp).
cudaStream_t launch_stream();
/// Throws BackendError naming `what` when the last launch failed (device_api_cuda.cpp).
void check_launch(const char* what);
#endif

#if !defined(MCC_CUDA_EMULATION) && defined(__CUDACC__)

template <class F>
__global__ void for_each_kernel(F f, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}
template <class F>
__global__ void for_each_block_kernel(F f, int64_t blocks) {
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x)
    f(BlockCtx{b, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)});
}
template <class F>
void for_each(int64_t n, F f) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  const int64_t want = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(want < 65535 * 8 ? want : 65535 * 8);
  for_each_kernel<<<grid, kThreads, 0, launch_stream()>>>(f, n);
  check_launch("for_each");
}
template <class F>
void for_each_block(int64_t blocks, int threads, F f) {
  if (blocks <= 0) return;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
  for_each_block_kernel<<<grid, threads, 0, launch_stream()>>>(f, blocks);
  check_launch("for_each_block");
}
/// Sum of v over the threads of the block, returned to every thread. Block size: a multiple of
/// 32, at most 1024. Every thread of the block must call it.
__device__ inline float block_sum(float v, const BlockCtx&) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  float t = lane < warps ? partial[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
  return t;
}
__device__ inline float block_max(float v, const BlockCtx&) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  float t = lane < warps ? partial[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, o));
  return t;
}
__device__ inline float fast_exp(float x) { return expf(x); }
#endif

}  // namespace mcc::cuda

// Shape8 and strided_offset (broadcasting, strides) live in shape8.h.
#include "backends/cuda/runtime/shape8.h"
