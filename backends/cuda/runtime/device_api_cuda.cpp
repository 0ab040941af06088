// device_api.h on the CUDA runtime: device 0, one non-blocking stream created on first use, and
// the launch helpers launch.h declares for the nvcc build. Every failing call throws BackendError
// naming the call and cudaGetErrorString. Not compiled into the emulation build
// (device_api_emulated.cpp stands in there).
#include <cuda_runtime.h>

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>

#include "backends/cuda/runtime/device_api.h"
#include "ir/errors.h"

namespace mcc::cuda {
namespace {

void check(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky-free error so the next call reports its own
  throw BackendError(std::string("cuda: ") + call + " failed: " + cudaGetErrorString(err));
}

struct Probe {
  int count = 0;
  std::string error;  // the runtime's reason when count == 0
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      r.error = cudaGetErrorString(err);
      cudaGetLastError();
      return r;
    }
    r.count = n;
    return r;
  }();
  return p;
}

cudaStream_t stream_or_create() {
  static cudaStream_t stream = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    check(cudaSetDevice(0), "cudaSetDevice(0)");
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  });
  return stream;
}

}  // namespace

cudaStream_t launch_stream() { return stream_or_create(); }

void check_launch(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw BackendError(std::string("cuda: kernel launch ") + what + " failed: " + cudaGetErrorString(err));
}

bool emulated() { return false; }

int device_count() { return probe().count; }

std::string device_description() {
  if (device_count() == 0) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    cudaGetLastError();
    return "cuda device 0";
  }
  std::ostringstream os;
  os.precision(1);
  os << prop.name << " (sm_" << prop.major << prop.minor << ", " << std::fixed
     << static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0) << " GiB)";
  return os.str();
}

std::string unavailable_reason() {
  const Probe& p = probe();
  if (p.count > 0) return "";
  return p.error.empty() ? "no CUDA device was found" : "no CUDA device was found (" + p.error + ")";
}

void* device_malloc(size_t bytes) {
  stream_or_create();
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw BackendError("cuda: out of device memory allocating " + std::to_string(bytes) + " bytes");
  }
  check(err, "cudaMalloc");
  return p;
}

void device_free(void* p) {
  if (p) cudaFree(p);  // never throws: called from destructors
}

void* pinned_malloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMallocHost(&p, bytes == 0 ? 1 : bytes) == cudaSuccess) return p;
  cudaGetLastError();
  p = std::malloc(bytes == 0 ? 1 : bytes);
  if (!p) throw BackendError("out of host memory allocating a " + std::to_string(bytes) + "-byte staging buffer");
  return p;
}

void pinned_free(void* p) {
  if (!p) return;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) == cudaSuccess && attr.type == cudaMemoryTypeHost) {
    cudaFreeHost(p);
    return;
  }
  cudaGetLastError();
  std::free(p);
}

void copy_to_device(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  // From pageable memory the runtime stages the source before returning, so the caller may free
  // it right away; the copy itself stays ordered on the stream before later kernels. A pinned
  // source (pinned_malloc) is read asynchronously: synchronize() before reusing or freeing it.
  check(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_or_create()),
        "cudaMemcpyAsync(host to device)");
}

void copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_or_create()),
        "cudaMemcpyAsync(device to host)");
  check(cudaStreamSynchronize(stream_or_create()), "cudaStreamSynchronize");
}

void copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_or_create()),
        "cudaMemcpyAsync(device to device)");
}

void fill_zero(void* dst, size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemsetAsync(dst, 0, bytes, stream_or_create()), "cudaMemsetAsync");
}

void synchronize() {
  if (device_count() == 0) return;
  check(cudaStreamSynchronize(stream_or_create()), "cudaStreamSynchronize");
}

}  // namespace mcc::cuda
