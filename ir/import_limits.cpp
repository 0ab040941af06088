// Size checks on tensors claimed by untrusted files, done before allocating (import_limits.h).
#include "ir/import_limits.h"

#include <limits>

#include "ir/errors.h"

namespace mcc::ir::limits {

uint64_t tensor_bytes(DType dt, const std::vector<int64_t>& dims) {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t numel = 1;
  for (int64_t d : dims) {
    if (d < 0) throw ModelError("negative tensor dimension " + std::to_string(d));
    if (d != 0 && numel > kMax / static_cast<uint64_t>(d))
      throw ModelError("tensor element count overflows int64 (dims too large)");
    numel *= static_cast<uint64_t>(d);
  }
  const int bits = info(dt).bits;
  if (bits <= 0) return 0;
  // bytes = ceil(numel * bits / 8), without overflowing on the way.
  const uint64_t whole = numel / 8 * static_cast<uint64_t>(bits);
  const uint64_t part = (numel % 8 * static_cast<uint64_t>(bits) + 7) / 8;
  if (numel / 8 > kMax / static_cast<uint64_t>(bits) || whole > kMax - part)
    throw ModelError("tensor of " + std::to_string(numel) + " elements of " + dtype_name(dt) +
                     " would exceed 2^63 bytes (dims too large)");
  return whole + part;
}

void check_data_bytes(uint64_t have, uint64_t want, const std::string& what) {
  if (have != want)
    throw ModelError(what + " holds " + std::to_string(have) + " bytes, the dims claim " +
                     std::to_string(want));
}

std::string parse_failure_hint() {
  return "truncated or corrupt file, or messages nested deeper than " +
         std::to_string(kMaxProtobufNesting) + " levels (subgraphs inside subgraphs)";
}

}  // namespace mcc::ir::limits
