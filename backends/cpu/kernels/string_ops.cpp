// String kernels of opset 20.
//   StringConcat    opset 20+: elementwise X + Y with numpy broadcasting.
//   StringSplit     opset 20+: splits each element on `delimiter`; output Y has the input's shape
//                   plus one axis as long as the longest split (shorter rows padded with ""), Z
//                   (i64) the number of substrings per element. Python str.split semantics: with
//                   a delimiter, consecutive delimiters delimit empty strings; without one (unset
//                   or ""), runs of whitespace (ASCII and the Unicode spaces Python's isspace()
//                   knows, UTF-8 encoded) separate and leading/trailing whitespace is dropped.
//                   `maxsplit` limits the splits from the left; the rest is the last substring
//                   (with a whitespace split it keeps its trailing whitespace, as Python does).
//   RegexFullMatch  opset 20+: true where the whole element matches `pattern`.
// dtypes: string in, string / i64 / bool out. No arithmetic.
//
// RegexFullMatch and RE2: ONNX specifies RE2 syntax; mcc compiles the pattern with std::regex
// (ECMAScript grammar), which agrees with RE2 on the common subset (literals, classes with \d \w
// \s \b and their negations, [...] sets, groups, (?:...), alternation, greedy and lazy {m,n} * +
// ?, ^ $ anchors). Translated: a leading (?i) (case-insensitive), \A and \z (string anchors).
// Rejected with UnsupportedError: other RE2 flag groups ((?s), (?m), (?U), (?i) not at the start),
// named groups (?P<name>...), Unicode classes \p{..} \pL, \Q...\E, \C. Remaining gaps: std::regex
// works on bytes, so `.` and negated classes match one byte of a multi-byte UTF-8 character (RE2
// matches whole code points); ECMAScript-only syntax (backreferences \1, lookahead (?=...)) is
// accepted where RE2 would reject the pattern; std::regex backtracks, so very long inputs with
// nested quantifiers are slow where RE2 is linear.
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

void require_string(const ir::Node& n, const ir::Tensor& t, const char* what) {
  if (t.dtype() != ir::DType::String)
    throw ModelError(n.describe() + ": " + n.op_type + " " + what +
                     " must be a string tensor, got " + ir::dtype_name(t.dtype()));
}

// ---------------------------------------------------------------------------- StringConcat

void string_concat(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  const ir::Tensor& y = ctx.in(1);
  require_string(n, x, "X");
  require_string(n, y, "Y");
  const auto out_dims = broadcast_shapes(n, x.dims(), y.dims());
  ir::Tensor& z = ctx.alloc_output(0, ir::DType::String, out_dims);
  const auto& xs = x.strings();
  const auto& ys = y.strings();
  auto& zs = z.mutable_strings();
  for_each_broadcast(
      out_dims, {broadcast_strides(x.dims(), out_dims), broadcast_strides(y.dims(), out_dims)},
      [&](int64_t i, int64_t a, int64_t b, int64_t) {
        zs[static_cast<size_t>(i)] = xs[static_cast<size_t>(a)] + ys[static_cast<size_t>(b)];
      });
}

// ---------------------------------------------------------------------------- StringSplit

/// Length in bytes of the whitespace character at s[i] (0 when it is not whitespace), as Python's
/// str.isspace() for the UTF-8 encoded code point.
size_t space_len(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  auto byte = [&](size_t k) {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  if (c == 0xc2 && (byte(1) == 0x85 || byte(1) == 0xa0)) return 2;  // U+0085, U+00A0
  if (c == 0xe1 && byte(1) == 0x9a && byte(2) == 0x80) return 3;    // U+1680
  if (c == 0xe2 && byte(1) == 0x80 &&
      (byte(2) <= 0x8a || byte(2) == 0xa8 || byte(2) == 0xa9 || byte(2) == 0xaf))
    return 3;                                                     // U+2000-200A, 2028, 2029, 202F
  if (c == 0xe2 && byte(1) == 0x81 && byte(2) == 0x9f) return 3;  // U+205F
  if (c == 0xe3 && byte(1) == 0x80 && byte(2) == 0x80) return 3;  // U+3000
  return 0;
}

/// Python's s.split(None, maxsplit) (maxsplit < 0: unlimited).
std::vector<std::string> split_whitespace(const std::string& s, int64_t maxsplit) {
  std::vector<std::string> out;
  size_t i = 0;
  auto skip = [&] {
    while (i < s.size()) {
      const size_t l = space_len(s, i);
      if (!l) break;
      i += l;
    }
  };
  skip();
  while (i < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(s.substr(i));  // the rest, trailing whitespace included (as Python)
      return out;
    }
    const size_t start = i;
    while (i < s.size() && !space_len(s, i)) ++i;
    out.push_back(s.substr(start, i - start));
    skip();
  }
  return out;
}

/// Python's s.split(sep, maxsplit) for a non-empty sep.
std::vector<std::string> split_on(const std::string& s, const std::string& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const size_t p = s.find(sep, start);
    if (p == std::string::npos) break;
    out.push_back(s.substr(start, p - start));
    start = p + sep.size();
  }
  out.push_back(s.substr(start));
  return out;
}

Kernel make_string_split(const ir::Node& node) {
  const std::string delim = node.attr_string("delimiter", "");
  const int64_t maxsplit = node.has_attr("maxsplit") ? node.attr_int("maxsplit", -1) : -1;
  return [delim, maxsplit](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    require_string(n, x, "X");
    const auto& xs = x.strings();
    std::vector<std::vector<std::string>> parts(xs.size());
    size_t width = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      parts[i] =
          delim.empty() ? split_whitespace(xs[i], maxsplit) : split_on(xs[i], delim, maxsplit);
      width = std::max(width, parts[i].size());
    }
    std::vector<int64_t> ydims = x.dims();
    ydims.push_back(static_cast<int64_t>(width));
    ir::Tensor& y = ctx.alloc_output(0, ir::DType::String, ydims);
    auto& ys = y.mutable_strings();
    for (size_t i = 0; i < parts.size(); ++i)
      for (size_t k = 0; k < parts[i].size(); ++k) ys[i * width + k] = std::move(parts[i][k]);
    if (ctx.wants_output(1)) {
      ir::Tensor& z = ctx.alloc_output(1, ir::DType::I64, x.dims());
      auto zd = z.mutable_data<int64_t>();
      for (size_t i = 0; i < parts.size(); ++i) zd[i] = static_cast<int64_t>(parts[i].size());
    }
  };
}

// ---------------------------------------------------------------------------- RegexFullMatch

/// RE2 pattern -> ECMAScript pattern (see the header comment); sets icase for a leading (?i).
std::string re2_to_ecmascript(const ir::Node& n, const std::string& p, bool& icase) {
  auto unsupported = [&](const std::string& what) {
    throw UnsupportedError(n.describe() + ": RegexFullMatch pattern '" + p + "': RE2 " + what +
                           " is not supported by the cpu backend (std::regex ECMAScript)");
  };
  std::string out;
  size_t i = 0;
  icase = false;
  if (p.rfind("(?i)", 0) == 0) {
    icase = true;
    i = 4;
  }
  bool in_class = false;
  for (; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (!in_class && e == 'A') {
        out += '^';
        ++i;
        continue;
      }
      if (!in_class && e == 'z') {
        out += '$';
        ++i;
        continue;
      }
      if (e == 'p' || e == 'P') unsupported("Unicode class \\" + std::string(1, e));
      if (e == 'Q') unsupported("quoting \\Q...\\E");
      if (e == 'C') unsupported("\\C");
      out += c;
      out += e;
      ++i;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == '(' && i + 1 < p.size() && p[i + 1] == '?') {
      const char k = i + 2 < p.size() ? p[i + 2] : '\0';
      if (k == 'P' || k == '<') unsupported("named group");
      if (k != ':' && k != '=' && k != '!') unsupported("flag group");
    }
    out += c;
  }
  return out;
}

Kernel make_regex_full_match(const ir::Node& n) {
  if (!n.has_attr("pattern"))
    throw ModelError(n.describe() + ": RegexFullMatch needs the 'pattern' attribute");
  const std::string pattern = n.attr_string("pattern", "");
  bool icase = false;
  const std::string ecma = re2_to_ecmascript(n, pattern, icase);
  std::shared_ptr<const std::regex> re;
  try {
    auto flags = std::regex::ECMAScript | std::regex::optimize;
    if (icase) flags |= std::regex::icase;
    re = std::make_shared<const std::regex>(ecma, flags);
  } catch (const std::regex_error& e) {
    throw ModelError(n.describe() + ": RegexFullMatch pattern '" + pattern +
                     "' is invalid: " + e.what());
  }
  return [re](KernelContext& ctx) {
    const ir::Tensor& x = ctx.in(0);
    require_string(ctx.node(), x, "X");
    const auto& xs = x.strings();
    ir::Tensor& y = ctx.alloc_output(0, ir::DType::Bool, x.dims());
    bool* yd = y.mutable_data<bool>().data();
    try {
      for (size_t i = 0; i < xs.size(); ++i) yd[i] = std::regex_match(xs[i], *re);
    } catch (const std::regex_error& e) {  // error_complexity / error_stack on pathological input
      throw UnsupportedError(ctx.node().describe() +
                             ": RegexFullMatch: std::regex gave up: " + e.what());
    }
  };
}

}  // namespace

void register_string_ops(KernelRegistry& r) {
  r.add("StringConcat", 20, 0, stateless(string_concat));
  r.add("StringSplit", 20, 0, make_string_split);
  r.add("RegexFullMatch", 20, 0, make_regex_full_match);
}

}  // namespace mcc::backends::cpu
