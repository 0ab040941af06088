// JSON text of mcc's files and reports when strings may hold bytes that are not UTF-8.
//
// nlohmann::json refuses to serialize invalid UTF-8 (type_error 316). Model names are arbitrary
// bytes, so every JSON mcc writes goes through dump_json: a document whose strings are all valid
// UTF-8 is written exactly as before; otherwise every string and key is written through
// escape_bytes (ir/text_escape.h) and, when the document is an object, a top-level
// "string_escapes" entry says so. unescape_json_strings restores the exact bytes on reading, so a
// sidecar state naming such nodes replays them byte-exactly.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace mcc::io {

/// Key of the top-level entry that marks an escaped document, and its value.
inline constexpr const char* kStringEscapesKey = "string_escapes";
inline constexpr const char* kStringEscapesValue = "strings hold \\\\ for a backslash and \\xNN for a byte that is not UTF-8";

/// Serialized text (indent < 0: one line), escaping as described above.
std::string dump_json(const nlohmann::ordered_json& j, int indent = 2);
std::string dump_json(const nlohmann::json& j, int indent = 2);

/// When `j` is an object with "string_escapes", unescapes every string and key and removes the
/// entry. Throws ModelError on a malformed escape.
void unescape_json_strings(nlohmann::ordered_json& j);

}  // namespace mcc::io
