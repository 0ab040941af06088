// Text that is safe to print and to put in JSON when model names are arbitrary bytes.
//
// ONNX names are protobuf `string` fields, but nothing stops a file from holding bytes that are
// not UTF-8, or control characters (an ESC sequence in a node name would repaint the terminal).
// The ONNX output keeps such names byte-exact; only text meant for people and JSON is escaped:
//  - printable(): for the terminal. Valid UTF-8 stays, except control characters other than
//    newline and tab (C0, DEL, C1), which become `\xNN` per byte, as do bytes that are not UTF-8.
//  - escape_bytes() / unescape_bytes(): a reversible form for JSON strings: `\` becomes `\\` and
//    every byte that is not part of valid UTF-8 becomes `\xNN`. Applied only to JSON documents
//    that hold at least one non-UTF-8 string (see io/json_text.h), so ordinary files do not change.
// Lives in ir/ so that file readers (ir/npy.cpp) quote file text the same way.
#pragma once
#include <string>
#include <string_view>

namespace mcc::ir {

/// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view s);

/// Text safe to write to a terminal (see the header comment).
std::string printable(std::string_view s);
/// The same on one line: newline and tab are escaped too (error messages are one line). Text
/// longer than `max_bytes` is cut there and ends with "...".
std::string printable_line(std::string_view s, size_t max_bytes = std::string_view::npos);

/// Reversible escape of arbitrary bytes into valid UTF-8 (see the header comment).
std::string escape_bytes(std::string_view s);
/// Inverse of escape_bytes. Throws ModelError on a `\` that starts no valid escape.
std::string unescape_bytes(std::string_view s);

}  // namespace mcc::ir
