// The flags several subcommands share, declared once: --backend, --threads, --json, --report.
// Each subcommand keeps its own option struct; these functions bind the flags to its fields with
// one spelling, one help text and one validity check.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "backends/executor.h"

namespace mcc::cli {

/// --backend NAME (cpu or cuda; default cpu). The name is resolved when the command runs
/// (exec_options), so an unavailable backend is exit 5, not a parse error.
void add_backend_flag(CLI::App* sub, std::string& backend);
/// The executor options of --backend and --threads, the backend resolved through the registry:
/// UsageError (exit 2) for an unknown name, BackendError (exit 5) for a backend that cannot run
/// here (no cuda in this build, no GPU).
backends::ExecOptions exec_options(const std::string& backend, int threads);
/// --threads N (0: all cores; negative is a usage error). `purpose` completes "Threads ...",
/// e.g. "for calibration"; empty for commands that only run the model.
void add_threads_flag(CLI::App* sub, int& threads, const std::string& purpose = "");
/// --json: print `what` ("the report", "the run's state") as JSON on stdout.
void add_json_flag(CLI::App* sub, bool& json, const std::string& what);
/// --report FILE: write `what` as JSON to FILE (atomically).
void add_report_flag(CLI::App* sub, std::string& report, const std::string& what);

}  // namespace mcc::cli
