// Text for HTML and inline SVG: model names are arbitrary bytes (ir/text_escape.h), so they are
// first made printable on one line (bytes that are not UTF-8 and control characters become
// `\xNN`), then the five characters HTML gives a meaning to become entities. Safe in element text
// and in double- or single-quoted attribute values.
#pragma once
#include <string>
#include <string_view>

namespace mcc::report {

std::string html_escape(std::string_view s);

/// Fixed formatting of a number for reports (printf `%.*g`, C locale), so output is byte-identical
/// across runs: "inf" / "-inf" / "nan" spelled out, negative zero printed as 0.
std::string fmt_g(double v, int digits = 4);
/// printf `%.*f` with negative zero printed as 0 (SVG coordinates).
std::string fmt_f(double v, int decimals = 1);

}  // namespace mcc::report
