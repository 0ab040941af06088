// Limits checked while reading untrusted files (ONNX models, TensorProto test data, .npy), before
// anything is allocated: a tensor's claimed size must be representable (element count and byte
// count within int64) and must match the bytes the file actually holds. Every refusal is a
// ModelError (exit 3) on one line. Not for tensors mcc builds itself (Tensor::allocate checks
// those), and not a memory budget: the data a file holds bounds what a tensor of it may claim.
// No limit on node counts: a chain of 10^6 nodes loads, verifies and exports in about 6 s and
// 1.8 GB (tests/ir/hostile_input_test.cpp, suite large). Graph walks are iterative (Kahn's sort);
// subgraph recursion is bounded by protobuf's nesting limit below.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace mcc::ir::limits {

/// Byte size of a tensor of `dt` with `dims` (packed for sub-byte types). Throws ModelError when
/// a dim is negative, the element count overflows int64 or the byte count exceeds int64.
/// Types without a fixed width (string, unknown codes) count 0 bytes.
uint64_t tensor_bytes(DType dt, const std::vector<int64_t>& dims);

/// Throws ModelError unless `have` bytes of `what` are exactly the `want` bytes the dims claim.
void check_data_bytes(uint64_t have, uint64_t want, const std::string& what);

/// Deepest message nesting protobuf parses (its default recursion limit); a model whose
/// subgraphs nest deeper (about a third of this in If/Loop levels) is refused at parse time.
inline constexpr int kMaxProtobufNesting = 100;

/// What a failed protobuf parse of a model may mean, for the one-line error.
std::string parse_failure_hint();

}  // namespace mcc::ir::limits
