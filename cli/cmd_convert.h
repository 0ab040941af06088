// mcc convert: options and the command body, callable without CLI11 (tests pass their own stage
// registry to run test-only stages through the real command).
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "transforms/pipeline/pass_registry.h"

namespace mcc::cli {

struct ConvertOptions {
  std::string input, output, pipeline, state_path, sidecar_path;
  bool json = false;
  bool dry_run = false;     // print the canonical pipeline and stop; nothing is read or written
  bool verify_each = true;  // ir::verify after every stage (--no-verify: benchmarking only)
  int threads = 0;
  std::string report_path;  // --report: the run's checks as JSON ("" = none, unless a check fails)
  bool report_check_failure = true;  // a missed budget prints its figures and writes a report
  /// Earlier configurations tried and rejected by a budget (mcc quantize): kept in the sidecar
  /// as "escalation"; a replay carries the state's own.
  nlohmann::ordered_json escalation;
  /// When the command started (mcc quantize: before its first configuration); the printed time
  /// counts from here. Unset: from the start of run_convert.
  std::optional<std::chrono::steady_clock::time_point> started;
};

/// Runs the conversion; returns the exit code of a success path, throws mcc errors otherwise.
int run_convert(const ConvertOptions& o,
                const transforms::PassRegistry& registry = transforms::builtin_passes());

}  // namespace mcc::cli
