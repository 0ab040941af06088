// What `mcc convert` / `mcc quantize` show and keep of a pipeline's check stages: one verdict line
// per judged output on stdout (metric, value, threshold, samples, PASS/FAIL), the sidecar's
// top-level "checks" list, and the JSON report written on request (--report) or, when a budget is
// missed, next to where the model would have gone. Does nothing for a pipeline without checks.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace mcc::cli {

/// The figures of every check stage among the sidecar's stage entries ({label, pass, record}),
/// each with its stage label: the sidecar's "checks". Empty when no check stage ran.
nlohmann::ordered_json collect_checks(const nlohmann::ordered_json& stages);

/// Prints one line per figure of a check record and the overall verdict.
void print_check_lines(const nlohmann::ordered_json& record);

/// `dir/name.onnx` -> `dir/name.check.json`: where a failed check's figures go without --report.
std::string default_check_report_path(const std::string& output);

}  // namespace mcc::cli
