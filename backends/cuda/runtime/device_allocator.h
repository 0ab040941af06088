// Caching device allocator: freed blocks are kept by rounded size and reused, so steady-state
// inference does no device mallocs (the practice of PyTorch's and ORT's CUDA allocators).
// Buffers it returns are ir::Buffers tagged with the cuda device; dropping the last reference
// returns the block to the cache.
#pragma once
#include <cstddef>
#include <memory>

#include "ir/tensor.h"

namespace mcc::cuda {

/// Uninitialised device memory of `bytes` bytes, tagged cuda:0.
std::shared_ptr<ir::Buffer> allocate_device_buffer(size_t bytes);
/// Bytes held in the cache (not in use), and in use, for profiles and tests.
size_t cached_device_bytes();
size_t used_device_bytes();
/// Frees every cached block.
void release_cached_device_memory();

}  // namespace mcc::cuda
