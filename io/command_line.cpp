// The recorded command line and POSIX shell quoting (see command_line.h).
#include "io/command_line.h"

namespace mcc::io {
namespace {
std::vector<std::string>& stored() {
  static std::vector<std::string> args;
  return args;
}
bool plain(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
         std::string_view("_-+=@%:,./").find(c) != std::string_view::npos;
}
}  // namespace

void set_command_line(int argc, const char* const* argv) {
  stored().assign(argv, argv + argc);
}

const std::vector<std::string>& command_line() { return stored(); }

std::string shell_quote(std::string_view arg) {
  bool ok = !arg.empty();
  for (char c : arg) ok = ok && plain(c);
  if (ok) return std::string(arg);
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string shell_command(const std::vector<std::string>& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) out += ' ';
    out += shell_quote(args[i]);
  }
  return out;
}

}  // namespace mcc::io
