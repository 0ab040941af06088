// prune mask codec: a pruning mask (one bit per weight element, set = zeroed by the stage) as
// compact text for the sidecar state.
//
// Two encodings; the encoder writes both and keeps the shorter (ties: rle):
//   rle     run lengths as LEB128 varints, alternating unset/set, the first run unset (may be 0);
//           compact for structured-looking masks (whole filters, long zero runs).
//   bitset  ceil(n/8) bytes, element i in bit (i % 8) of byte i / 8; bounded at n/8 bytes for
//           random-looking masks (unstructured 50 %).
// Both are then base64 (RFC 4648, padded). Decoding checks that the mask has exactly n elements
// (rle: the runs sum to n; bitset: the byte count and zero padding bits) and throws ModelError
// otherwise, so a state recorded for another model cannot be applied silently.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "transforms/common/base64.h"
#include "transforms/prune/prune.h"

namespace mcc::transforms::prune {

namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

uint64_t get_varint(const std::string& in, size_t& p) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= in.size()) throw ModelError("truncated run length");
    const auto b = static_cast<uint8_t>(in[p++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw ModelError("run length too long");
}

}  // namespace

EncodedMask encode_mask(const std::vector<bool>& bits) {
  const size_t set_size = (bits.size() + 7) / 8;
  // The run lengths are only kept while they are no longer than the bitset (the smaller form is
  // written), so a scattered mask never costs more than twice its bitset in memory.
  std::string rle;
  bool cur = false, rle_fits = true;
  uint64_t run = 0;
  for (size_t i = 0; i < bits.size() && rle_fits; ++i) {
    if (bits[i] != cur) {
      put_varint(rle, run);
      cur = bits[i];
      run = 0;
      rle_fits = rle.size() <= set_size;
    }
    ++run;
  }
  if (rle_fits && (run > 0 || bits.empty())) put_varint(rle, run);
  if (rle_fits && rle.size() <= set_size) return {"rle", base64_encode(rle)};
  rle = std::string();
  std::string set(set_size, '\0');
  for (size_t i = 0; i < bits.size(); ++i)
    if (bits[i]) set[i / 8] = static_cast<char>(static_cast<uint8_t>(set[i / 8]) | (1u << (i % 8)));
  return {"bitset", base64_encode(set)};
}

std::vector<bool> decode_mask(const EncodedMask& m, size_t n) {
  const std::string bytes = base64_decode(m.data);
  std::vector<bool> bits;
  bits.reserve(n);
  if (m.encoding == "rle") {
    size_t p = 0;
    bool cur = false;
    while (p < bytes.size()) {
      const uint64_t run = get_varint(bytes, p);
      if (run > n - bits.size()) throw ModelError("mask has more than " + std::to_string(n) + " elements");
      bits.insert(bits.end(), run, cur);
      cur = !cur;
    }
  } else if (m.encoding == "bitset") {
    if (bytes.size() != (n + 7) / 8)
      throw ModelError("bitset mask has " + std::to_string(bytes.size()) + " bytes, expected " +
                       std::to_string((n + 7) / 8) + " for " + std::to_string(n) + " elements");
    for (size_t i = 0; i < n; ++i) bits.push_back((static_cast<uint8_t>(bytes[i / 8]) >> (i % 8)) & 1u);
    for (size_t i = n; i < bytes.size() * 8; ++i)
      if ((static_cast<uint8_t>(bytes[i / 8]) >> (i % 8)) & 1u) throw ModelError("bitset mask has bits set past its end");
  } else {
    throw ModelError("unknown mask encoding '" + m.encoding + "' (expected rle or bitset)");
  }
  if (bits.size() != n)
    throw ModelError("mask has " + std::to_string(bits.size()) + " elements, the tensor " + std::to_string(n));
  return bits;
}

}  // namespace mcc::transforms::prune
