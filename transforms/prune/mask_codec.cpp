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
#include "transforms/prune/prune.h"

namespace mcc::transforms::prune {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

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

std::string base64_encode(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string base64_decode(const std::string& text) {
  if (text.size() % 4 != 0) throw ModelError("base64 text length is not a multiple of 4");
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0 || (v[k] = val(c)) < 0) throw ModelError("invalid base64 character");
    }
    const uint32_t x = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out.push_back(static_cast<char>((x >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((x >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(x & 0xff));
  }
  return out;
}

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
