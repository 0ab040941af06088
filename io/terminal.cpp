// A streambuf that forwards text through printable() (see io/terminal.h).
#include "io/terminal.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <streambuf>
#include <string>

#include "ir/text_escape.h"

namespace mcc::io {

using ir::escape_bytes;
using ir::is_valid_utf8;
using ir::printable;
using ir::unescape_bytes;
namespace {

/// Buffers text until a newline or a flush, then writes printable(text) to the wrapped streambuf.
/// A UTF-8 sequence cut by a flush is held back until its remaining bytes arrive.
class PrintableStreambuf final : public std::streambuf {
 public:
  explicit PrintableStreambuf(std::streambuf* sink) : sink_(sink) {}

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return sync() == 0 ? traits_type::not_eof(c) : c;
    pending_ += traits_type::to_char_type(c);
    if (c == '\n') forward();
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    pending_.append(s, static_cast<size_t>(n));
    if (pending_.find('\n') != std::string::npos) forward();
    return n;
  }
  int sync() override {
    forward();
    return sink_->pubsync();
  }

 private:
  /// Bytes at the end of pending_ that start a UTF-8 sequence whose tail has not arrived yet.
  size_t incomplete_tail() const {
    const size_t n = pending_.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
      const auto c = static_cast<uint8_t>(pending_[n - back]);
      if (c < 0x80) return 0;
      if (c >= 0xC0) {
        const size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        return want > back ? back : 0;
      }
    }
    return 0;
  }
  void forward() {
    const size_t keep = incomplete_tail();
    const std::string text = printable(std::string_view(pending_).substr(0, pending_.size() - keep));
    sink_->sputn(text.data(), static_cast<std::streamsize>(text.size()));
    pending_.erase(0, pending_.size() - keep);
  }

  std::streambuf* sink_;
  std::string pending_;
};

}  // namespace

void install_printable_output() {
  // Never destroyed: the standard streams flush at exit, after static objects may be gone.
  std::cout.rdbuf(new PrintableStreambuf(std::cout.rdbuf()));
  std::cerr.rdbuf(new PrintableStreambuf(std::cerr.rdbuf()));
}

namespace {
Verbosity g_verbosity = Verbosity::Normal;
}  // namespace

void set_verbosity(Verbosity v) { g_verbosity = v; }
Verbosity verbosity() { return g_verbosity; }

void print_requested(std::string_view text) { std::cout << text; }

void print_out(const char* format, ...) {
  if (g_verbosity == Verbosity::Quiet) return;
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, args);
  va_end(args);
  std::cout << text;
}

}  // namespace mcc::io
