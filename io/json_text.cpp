// dump_json / unescape_json_strings (see io/json_text.h).
#include "io/json_text.h"

#include "ir/text_escape.h"

namespace mcc::io {

using ir::escape_bytes;
using ir::is_valid_utf8;
using ir::printable;
using ir::unescape_bytes;
namespace {

template <class J>
bool has_invalid_utf8(const J& j) {
  if (j.is_string()) return !is_valid_utf8(j.template get_ref<const std::string&>());
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!is_valid_utf8(it.key()) || has_invalid_utf8(it.value())) return true;
  } else if (j.is_array()) {
    for (const auto& e : j)
      if (has_invalid_utf8(e)) return true;
  }
  return false;
}

/// Copy of `j` with every string and key passed through `f`.
template <class J, class F>
J map_strings(const J& j, const F& f) {
  if (j.is_string()) return J(f(j.template get_ref<const std::string&>()));
  if (j.is_object()) {
    J out = J::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[f(it.key())] = map_strings(it.value(), f);
    return out;
  }
  if (j.is_array()) {
    J out = J::array();
    for (const auto& e : j) out.push_back(map_strings(e, f));
    return out;
  }
  return j;
}

template <class J>
std::string dump_escaped(const J& j, int indent) {
  if (!has_invalid_utf8(j)) return j.dump(indent);
  J escaped = map_strings(j, [](const std::string& s) { return escape_bytes(s); });
  if (escaped.is_object()) escaped[kStringEscapesKey] = kStringEscapesValue;
  return escaped.dump(indent);
}

}  // namespace

std::string dump_json(const nlohmann::ordered_json& j, int indent) { return dump_escaped(j, indent); }
std::string dump_json(const nlohmann::json& j, int indent) { return dump_escaped(j, indent); }

void unescape_json_strings(nlohmann::ordered_json& j) {
  if (!j.is_object() || !j.contains(kStringEscapesKey)) return;
  j.erase(kStringEscapesKey);
  j = map_strings(j, [](const std::string& s) { return unescape_bytes(s); });
}

}  // namespace mcc::io
