// Pad on the device (constant, reflect, edge and wrap modes; negative pads crop), element-size
// generic (1, 2, 4 or 8 bytes). Plain C++ declarations; body in pad.cu.
// Does not apply to: more than kMaxPadRank dims, strings, sub-byte types, 16-byte elements, and
// non-constant modes on an empty input axis that is padded (the caller rejects those).
#pragma once
#include <cstdint>

namespace mcc::cuda {

constexpr int kMaxPadRank = 8;
enum class PadMode : int { Constant, Reflect, Edge, Wrap };

/// Output coordinate c along dim d reads input coordinate c - before[d] (mapped back inside
/// [0, in_dims[d]) by the mode, or the constant for PadMode::Constant).
struct PadGeometry {
  int rank = 0;
  int64_t in_dims[kMaxPadRank] = {};
  int64_t out_dims[kMaxPadRank] = {};
  int64_t before[kMaxPadRank] = {};
};

/// Writes every element of dst (dims geometry.out_dims); `constant` holds the little-endian bits
/// of the constant for PadMode::Constant.
void pad(const void* src, void* dst, const PadGeometry& geometry, PadMode mode, uint64_t constant,
         int elem_bytes);

}  // namespace mcc::cuda
