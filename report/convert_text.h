// What `mcc convert` / `mcc quantize` print of a pipeline's check stages: one verdict line per
// judged output on stdout (metric, value, threshold, samples, PASS/FAIL) and the overall verdict.
// Prints nothing for a record without checks.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace mcc::report {

/// Prints one line per figure of a check record and the overall verdict.
void print_check_lines(const nlohmann::ordered_json& record);

}  // namespace mcc::report
