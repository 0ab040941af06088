// Reading a large tensor once while giving its memory back as the read proceeds, so that a stage
// that turns a tensor into another (fp32 -> fp16, weights -> pruned weights) holds about one
// tensor's worth of memory instead of both, even for a model made of one huge tensor.
//
// consume_in_chunks visits the elements in chunks; after each chunk, when the tensor held the only
// reference to its bytes, their whole pages go back to the OS (file-mapped external data is
// dropped from memory; owned bytes are discarded). When someone else still holds the bytes, it
// is a plain chunked read and nothing is released. Either way the tensor is consumed (left
// undefined), so nobody can read the discarded bytes.
#pragma once
#include <cstdint>
#include <functional>

#include "ir/tensor.h"

namespace mcc::ir {

/// Elements per chunk for a tensor of `element_size`-byte elements (about 16 MiB of bytes).
int64_t stream_chunk_elements(size_t element_size);

/// Calls visit(data, begin, end) for consecutive element ranges covering `t`, where `data` is the
/// tensor's bytes (read elements [begin, end) only), then releases each visited range as the
/// header comment says. `t` must be a host tensor of a fixed-size element type.
void consume_in_chunks(Tensor&& t, const std::function<void(const std::byte* data, int64_t begin, int64_t end)>& visit);

}  // namespace mcc::ir
