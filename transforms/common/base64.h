// Base64 (RFC 4648, alphabet A-Z a-z 0-9 + /, '=' padding) for binary data a stage keeps in its
// JSON record: prune masks, GPTQ weight codes. Decoding refuses (ModelError) text of the wrong
// length or with characters outside the alphabet, so a damaged state is reported, not applied.
#pragma once
#include <string>

namespace mcc::transforms {

std::string base64_encode(const std::string& bytes);
std::string base64_decode(const std::string& text);  // throws ModelError

}  // namespace mcc::transforms
