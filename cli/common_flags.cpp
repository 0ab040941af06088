// Shared subcommand flags (see common_flags.h).
#include "cli/common_flags.h"

#include "backends/backend_registry.h"

namespace mcc::cli {

void add_backend_flag(CLI::App* sub, std::string& backend) {
  sub->add_option("--backend", backend, "cpu or cuda (default cpu)");
}

backends::ExecOptions exec_options(const std::string& backend, int threads) {
  if (threads < 0) throw UsageError("--threads " + std::to_string(threads) + ": must be 0 (all cores) or more");
  backends::ExecOptions o;
  o.threads = threads;
  o.backend = &backends::find_backend(backend);
  return o;
}

void add_threads_flag(CLI::App* sub, int& threads, const std::string& purpose) {
  sub->add_option("--threads", threads, "Threads" + (purpose.empty() ? "" : " " + purpose) + " (0: all cores)")
      ->check(CLI::NonNegativeNumber);
}

void add_json_flag(CLI::App* sub, bool& json, const std::string& what) {
  sub->add_flag("--json", json, "Print " + what + " as JSON on stdout");
}

void add_report_flag(CLI::App* sub, std::string& report, const std::string& what) {
  sub->add_option("--report", report, "Write " + what + " as JSON to FILE");
}

}  // namespace mcc::cli
