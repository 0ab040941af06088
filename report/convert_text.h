// What `mcc convert` / `mcc quantize` print when they finish, at most a few lines on stdout:
//   wrote OUT and OUT.mcc.json
//   size: 23.9 KiB -> 14.1 KiB (59 % of the input)
//   check: output 'y' top1_agreement 1 >= 0.99 on 20 held-back sample(s): PASS   (per figure)
//   check: verdict PASS
//   time: 0.06 s
// The canonical pipeline, the output's sha256 and each stage's details go to the log (-v); the
// sidecar keeps them all.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mcc::report {

/// Prints one line per figure of a check record and the overall verdict; `rejected`: how many
/// configurations a budget rejected before this one (mcc quantize's escalation).
void print_check_lines(const nlohmann::ordered_json& record, size_t rejected = 0);

struct ConvertSummary {
  std::vector<std::string> written;                  // files, in the order written
  uint64_t input_bytes = 0, output_bytes = 0;        // model files with their external data
  std::vector<nlohmann::ordered_json> check_records; // the check stages' records
  bool replayed = false;                             // --state: the verdicts are the recorded ones
  size_t rejected = 0;
  double seconds = 0;
};

/// The lines above.
void print_convert_summary(const ConvertSummary& s);

/// 1234567 -> "1.2 MiB" (B, KiB, MiB, GiB).
std::string human_bytes(uint64_t bytes);

}  // namespace mcc::report
