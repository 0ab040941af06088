// Subcommand registration. Each cli/cmd_<name>.cpp defines add_<name>_command(), which adds its
// CLI11 subcommand and, when that subcommand is chosen, records what to run in the CommandSlot.
// main.cpp runs the slot inside its one try/catch that maps errors to exit codes.
#pragma once
#include <functional>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

namespace mcc::cli {

/// The command chosen on the command line: set by a subcommand callback during parsing, run by
/// main after parsing succeeded. Returns the exit code for the success paths (0, or 1 for a
/// failed accuracy verdict); errors are thrown.
class CommandSlot {
 public:
  void set(std::function<int()> fn) { fn_ = std::move(fn); }
  bool empty() const { return !fn_; }
  int run() const { return fn_ ? fn_() : 0; }

 private:
  std::function<int()> fn_;
};

void add_inspect_command(CLI::App& app, CommandSlot& slot);
void add_convert_command(CLI::App& app, CommandSlot& slot);
void add_quantize_command(CLI::App& app, CommandSlot& slot);
void add_eval_command(CLI::App& app, CommandSlot& slot);
void add_bench_command(CLI::App& app, CommandSlot& slot);
void add_passes_command(CLI::App& app, CommandSlot& slot);

/// The exit-code table shown by `mcc -h` (and in the README).
inline const char* exit_code_table() {
  return "Exit codes:\n"
         "  0   success (for eval: every check passed)\n"
         "  1   accuracy check failed\n"
         "  2   usage error: bad flags, bad pipeline spec, unknown stage or option, unwritable output\n"
         "  3   invalid input: malformed or truncated model, data or state file; missing external data\n"
         "  4   unsupported op, opset, dtype or feature\n"
         "  5   backend unavailable or failed, out of memory\n"
         "  70  internal error (a bug; rerun with -v and report it)\n";
}

}  // namespace mcc::cli
