// The cuda backend: cuBLAS and CUDA kernels on one stream with a caching device allocator. In
// the emulation build (MCC_CUDA_EMULATION) the same kernels run on the host, on memory tagged as
// device memory, so every placement, transfer and kernel path is exercised without a GPU.
#pragma once
#include "backends/backend.h"

namespace mcc::backends::cuda {

/// The process-wide cuda backend (exists even without a device; see unavailable_reason()).
const Backend& cuda_backend();

}  // namespace mcc::backends::cuda
