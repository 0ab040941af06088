// HTML escaping and fixed number formatting for the HTML report (see html_escape.h).
#include "report/html_escape.h"

#include <cmath>
#include <cstdio>

#include "ir/text_escape.h"

namespace mcc::report {

std::string html_escape(std::string_view s) {
  const std::string p = ir::printable_line(s);
  std::string out;
  out.reserve(p.size());
  for (char c : p) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fmt_g(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) v = 0;  // -0 -> 0
  char b[48];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

std::string fmt_f(double v, int decimals) {
  if (!std::isfinite(v)) return "0";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  std::string s = b;
  // "-0.0" and the like: a value that rounds to zero prints as zero.
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

}  // namespace mcc::report
