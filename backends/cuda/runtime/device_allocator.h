// Caching device allocator (and its page-locked host twin for downloads): freed blocks are kept by rounded size and reused, so steady-state
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
/// Host memory for a tensor copied back from the device: page-locked and cached like device blocks
/// (the copy runs at full bus speed and a steady-state run touches no fresh pages), uninitialised,
/// tagged host; plain owned memory below 256 KiB or while 2 GiB of page-locked downloads are alive.
std::shared_ptr<ir::Buffer> allocate_download_buffer(size_t bytes);
/// Page-locked bytes held by live download buffers.
size_t used_pinned_bytes();
/// Bytes held in the cache (not in use), and in use, for profiles and tests.
size_t cached_device_bytes();
size_t used_device_bytes();
/// Frees every cached block (device and page-locked host).
void release_cached_device_memory();

}  // namespace mcc::cuda
