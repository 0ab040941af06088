// The command line mcc was started with, kept by main() so that reports can print the exact
// command that reproduces them. Empty in processes that never called set_command_line (tests
// that call library functions directly).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace mcc::io {

/// Records argv (main() calls it once, before parsing).
void set_command_line(int argc, const char* const* argv);
/// The recorded arguments, argv[0] included.
const std::vector<std::string>& command_line();

/// `arg` as one POSIX shell word: unchanged when it holds only characters no shell treats
/// specially, else single-quoted (a single quote inside becomes '\'').
std::string shell_quote(std::string_view arg);
/// The arguments shell-quoted and joined with spaces.
std::string shell_command(const std::vector<std::string>& args);

}  // namespace mcc::io
