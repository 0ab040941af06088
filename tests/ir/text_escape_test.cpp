// Unit tests of ir/text_escape.* and io/json_text.*: UTF-8 validation, terminal-safe text, the
// reversible byte escapes and JSON documents holding names that are not UTF-8.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "io/json_text.h"
#include "ir/text_escape.h"
#include "ir/errors.h"

namespace io = mcc::io;
using namespace mcc::ir;
using namespace std::string_literals;

TEST_CASE("is_valid_utf8 accepts well-formed text and refuses every malformed form") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("conv_1/weight"));
  CHECK(is_valid_utf8("\xc3\xa9t\xc3\xa9"));                 // é
  CHECK(is_valid_utf8("\xe2\x82\xac"));                      // €
  CHECK(is_valid_utf8("\xf0\x9f\x98\x80"));                  // U+1F600
  CHECK(is_valid_utf8("\xf4\x8f\xbf\xbf"));                  // U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xff"));
  CHECK_FALSE(is_valid_utf8("a\x80"));                       // lone continuation byte
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));                    // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xe0\x80\xaf"));                // overlong, 3 bytes
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));                // UTF-16 surrogate
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));            // above U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xe2\x82"));                    // truncated
  CHECK_FALSE(is_valid_utf8("\xc3"));
}

TEST_CASE("printable escapes control characters and bytes that are not UTF-8, and keeps the rest") {
  CHECK(printable("conv 1\tok\n") == "conv 1\tok\n");
  CHECK(printable("\xc3\xa9") == "\xc3\xa9");
  CHECK(printable("m\xff\x1b[31m") == "m\\xff\\x1b[31m");
  CHECK(printable("a\x7f" "b") == "a\\x7fb");
  CHECK(printable("\xc2\x9b" "2J") == "\\xc2\\x9b2J");       // C1 CSI
  CHECK(printable("x\rY") == "x\\x0dY");
  CHECK(printable("nul\0end"s) == "nul\\x00end");
  CHECK(printable_line("a\nb\tc\xff") == "a\\x0ab\\x09c\\xff");  // error lines stay one line
}

TEST_CASE("escape_bytes is the identity on UTF-8 without backslashes and is undone by unescape_bytes") {
  CHECK(escape_bytes("conv/weight") == "conv/weight");
  CHECK(escape_bytes("a\\b") == "a\\\\b");
  CHECK(escape_bytes("w\xfe\x01") == "w\\xfe\x01");
  CHECK(escape_bytes("\\xff\xff") == "\\\\xff\\xff");
  CHECK(unescape_bytes("\\\\xff\\xff") == "\\xff\xff");
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 12, '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 4 == 0 ? '\\' : rng() % 256);
    const std::string e = escape_bytes(s);
    REQUIRE(is_valid_utf8(e));
    REQUIRE(unescape_bytes(e) == s);
  }
  CHECK_THROWS_AS(unescape_bytes("a\\q"), mcc::ModelError);
  CHECK_THROWS_AS(unescape_bytes("a\\x4"), mcc::ModelError);
  CHECK_THROWS_AS(unescape_bytes("a\\"), mcc::ModelError);
}

TEST_CASE("dump_json writes UTF-8 documents as nlohmann does and escapes the others reversibly") {
  nlohmann::ordered_json plain = {{"node", "conv\\1"}, {"values", {1, 2.5, "x"}}};
  CHECK(io::dump_json(plain, 2) == plain.dump(2));
  CHECK(io::dump_json(nlohmann::json(plain), -1) == nlohmann::json(plain).dump());

  nlohmann::ordered_json odd = {{"node", "m\xff\x1b"}, {"w\xfe", {"a\\b", 3}}, {"plain", "conv\\1"}};
  const std::string text = io::dump_json(odd, 2);
  auto parsed = nlohmann::ordered_json::parse(text);  // valid UTF-8: parses
  CHECK(parsed[io::kStringEscapesKey] == io::kStringEscapesValue);
  CHECK(parsed["node"] == "m\\xff\x1b");
  CHECK(parsed["plain"] == "conv\\\\1");
  io::unescape_json_strings(parsed);
  CHECK(parsed == odd);
  CHECK_FALSE(parsed.contains(io::kStringEscapesKey));

  nlohmann::ordered_json unmarked = {{"node", "a\\xff"}};
  io::unescape_json_strings(unmarked);  // no marker: left exactly as read
  CHECK(unmarked["node"] == "a\\xff");
}
