// Escaping of non-UTF-8 and control bytes for terminals and JSON (see ir/text_escape.h).
#include "ir/text_escape.h"

#include <cstdint>

#include "ir/errors.h"

namespace mcc::ir {
namespace {

/// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_length_at(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c == 0xED) n = 3, hi = 0x9F;  // no UTF-16 surrogates
  else if (c >= 0xE1 && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F;  // nothing above U+10FFFF
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  return n;
}

void append_hex_escape(std::string& out, uint8_t byte) {
  static const char* digits = "0123456789abcdef";
  out += "\\x";
  out += digits[byte >> 4];
  out += digits[byte & 15];
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length_at(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

namespace {

std::string escape_for_terminal(std::string_view s, bool keep_line_breaks) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length_at(s, i);
    const auto c = static_cast<uint8_t>(s[i]);
    const bool kept_space = keep_line_breaks && (c == '\n' || c == '\t');
    const bool control = (n == 1 && ((c < 0x20 && !kept_space) || c == 0x7F)) ||
                         (n == 2 && c == 0xC2 && static_cast<uint8_t>(s[i + 1]) < 0xA0);  // C1
    if (n == 0 || control) {
      for (size_t k = 0; k < (n ? n : 1); ++k) append_hex_escape(out, static_cast<uint8_t>(s[i + k]));
      i += n ? n : 1;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace

std::string printable(std::string_view s) { return escape_for_terminal(s, true); }
std::string printable_line(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return escape_for_terminal(s, false);
  return escape_for_terminal(s.substr(0, max_bytes), false) + "...";
}

std::string escape_bytes(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length_at(s, i);
    if (n == 0) {
      append_hex_escape(out, static_cast<uint8_t>(s[i]));
      ++i;
    } else {
      if (s[i] == '\\') out += '\\';
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string unescape_bytes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '\\') {
      out += '\\';
      ++i;
      continue;
    }
    const int hi = i + 3 < s.size() && s[i + 1] == 'x' ? hex_value(s[i + 2]) : -1;
    const int lo = hi >= 0 ? hex_value(s[i + 3]) : -1;
    if (lo < 0)
      throw ModelError("invalid escape at byte " + std::to_string(i) + " of \"" + printable(s) +
                       "\" (a file with string_escapes has only \\\\ and \\xNN escapes)");
    out += static_cast<char>(hi * 16 + lo);
    i += 3;
  }
  return out;
}

}  // namespace mcc::ir
