// The `mcc` binary: builds the CLI11 app, registers subcommands, sets log levels, and maps every
// error to an exit code in one place (SPEC §2): one line on stderr, no stack traces.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <new>

#include "io/command_line.h"
#include "cli/commands.h"
#include "io/terminal.h"
#include "ir/text_escape.h"
#include "ir/errors.h"

namespace {
int report(const std::exception& e, int code) {
  std::cerr << "mcc: error: " << mcc::ir::printable_line(e.what()) << "\n";
  return code;
}
/// The log: warnings and errors by default, errors only with -q, debug with -v (the canonical
/// pipeline and each stage's details), trace with -vv.
void setup_logging(int verbose, bool quiet) {
  // Through std::cerr, so log lines pass the same printable filter as everything else.
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(std::cerr, /*force_flush=*/true);
  auto logger = std::make_shared<spdlog::logger>("mcc", sink);
  logger->set_pattern("mcc: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum level = spdlog::level::warn;
  if (quiet) level = spdlog::level::err;
  else if (verbose == 1) level = spdlog::level::debug;
  else if (verbose >= 2) level = spdlog::level::trace;
  spdlog::set_level(level);
  mcc::io::set_verbosity(quiet ? mcc::io::Verbosity::Quiet
                               : verbose ? mcc::io::Verbosity::Verbose : mcc::io::Verbosity::Normal);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace mcc::cli;
  mcc::io::install_printable_output();
  mcc::io::set_command_line(argc, argv);
  CLI::App app{"mcc: convert, compress and check ONNX models", "mcc"};
  app.require_subcommand(1);
  app.fallthrough();  // -q/-v work after the subcommand too
  app.set_version_flag("--version", MCC_VERSION);
  app.footer(std::string("\n") + exit_code_table() +
             "\nExamples:\n  mcc inspect model.onnx\n  mcc convert model.onnx -o out.onnx -p fold --dry-run\n  mcc passes\n"
             "Run 'mcc <command> -h' for the options of a command.");
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose,
               "Also the canonical pipeline and each stage's details on stderr (-v debug, -vv trace)");
  app.add_flag("-q,--quiet", quiet, "Print nothing on success (errors still go to stderr; --json output still prints)");

  CommandSlot slot;
  add_inspect_command(app, slot);
  add_convert_command(app, slot);
  add_quantize_command(app, slot);
  add_eval_command(app, slot);
  add_bench_command(app, slot);
  add_passes_command(app, slot);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "mcc: error: " << e.what() << "; run 'mcc -h' or 'mcc <command> -h' for usage\n";
    return 2;
  }
  setup_logging(verbose, quiet);

  try {
    return slot.run();
  } catch (const mcc::AccuracyError& e) {
    return report(e, 1);
  } catch (const mcc::UsageError& e) {
    return report(e, 2);
  } catch (const mcc::ModelError& e) {
    return report(e, 3);
  } catch (const mcc::UnsupportedError& e) {
    return report(e, 4);
  } catch (const mcc::BackendError& e) {
    return report(e, 5);
  } catch (const std::bad_alloc&) {
    std::cerr << "mcc: error: out of memory; use a machine with more memory or a smaller model\n";
    return 5;
  } catch (const std::exception& e) {
    std::cerr << "mcc: internal error: " << mcc::ir::printable_line(e.what()) << "; please report it with the command line (rerun with -v)\n";
    return 70;
  } catch (...) {
    std::cerr << "mcc: internal error: unknown exception; please report it with the command line\n";
    return 70;
  }
}
