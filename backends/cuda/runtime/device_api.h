// The device runtime the cuda backend's host code uses: device discovery, memory, copies, the one
// stream. Two implementations of this header: device_api_cuda.cpp (the CUDA runtime) and
// device_api_emulated.cpp (host memory standing in for device memory, for the emulation build).
// Errors throw BackendError with the failing call and the runtime's message.
#pragma once
#include <cstddef>
#include <string>

namespace mcc::cuda {

/// True in the emulation build (kernels run on the host).
bool emulated();
/// Number of usable devices (0 when the driver or a device is missing; never throws).
int device_count();
/// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" or "emulated on the host"; "" when no device.
std::string device_description();
/// Why the backend cannot run here, or "" when it can.
std::string unavailable_reason();

void* device_malloc(size_t bytes);  // throws BackendError ("out of device memory") on failure
void device_free(void* p);
/// Page-locked host memory for staging transfers (falls back to plain memory when refused).
void* pinned_malloc(size_t bytes);
void pinned_free(void* p);

/// Copies on the backend's stream; to_host waits for the copy (and everything before it).
void copy_to_device(void* dst, const void* host_src, size_t bytes);
void copy_to_host(void* host_dst, const void* src, size_t bytes);
void copy_on_device(void* dst, const void* src, size_t bytes);
void fill_zero(void* dst, size_t bytes);
/// Waits for all work queued on the stream.
void synchronize();

}  // namespace mcc::cuda
