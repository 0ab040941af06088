// device_api.h for the emulation build: "device" memory is host memory, copies are memcpy, there
// is one always-present device. Also the binary16 conversions launch.h's emulated half_t uses
// (Eigen::half: round to nearest even, exact for subnormals, infinities and NaN).
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cuda/runtime/device_api.h"
#include "backends/cuda/runtime/launch.h"
#include "ir/errors.h"
#include "ir/float16.h"

namespace mcc::cuda {

float half_to_float(uint16_t h) { return static_cast<float>(Eigen::numext::bit_cast<f16>(h)); }

uint16_t float_to_half(float f) { return Eigen::numext::bit_cast<uint16_t>(f16(f)); }

bool emulated() { return true; }

int device_count() { return 1; }

std::string device_description() { return "emulated on the host"; }

std::string unavailable_reason() { return ""; }

void* device_malloc(size_t bytes) {
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (!p) throw BackendError("out of device memory allocating " + std::to_string(bytes) + " bytes (emulated)");
  return p;
}

void device_free(void* p) { std::free(p); }

void* pinned_malloc(size_t bytes) { return device_malloc(bytes); }

void pinned_free(void* p) { std::free(p); }

void copy_to_device(void* dst, const void* host_src, size_t bytes) {
  if (bytes) std::memcpy(dst, host_src, bytes);
}

void copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(host_dst, src, bytes);
}

void copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

void fill_zero(void* dst, size_t bytes) {
  if (bytes) std::memset(dst, 0, bytes);
}

void synchronize() {}

}  // namespace mcc::cuda
