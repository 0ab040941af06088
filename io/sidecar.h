// The sidecar state written next to every output model (SPEC §4): `<OUT without .onnx>.mcc.json`.
// JSON via nlohmann::ordered_json: stable key order, floats printed shortest-round-trip (the
// text parses back to the same double bits).
//
// Layout: schema_version, tool {name, version}, input {path, size, sha256}, output {path, sha256},
// pipeline (canonical text), stages [{label, pass, options, modified, stats, nodes_before,
// nodes_after, initializer_bytes_before, initializer_bytes_after, record}], checks (when a check
// stage ran: [{stage, output, metric, value, threshold, verdict, samples, data}]), escalation (when
// a budget rejected earlier configurations: [{pipeline, verdict, checks}]), timings.
//
// Volatile keys — the only ones that differ between two identical runs — all live under the
// top-level "timings" object: timings.total_seconds and timings.stages.<label> (seconds per
// stage). Everything else is a function of the input bytes, the command line and the mcc version.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace mcc::io {

/// Newest schema_version this build writes and reads.
inline constexpr int kSidecarSchemaVersion = 1;

/// `dir/name.onnx` -> `dir/name.mcc.json`; a name without `.onnx` gets `.mcc.json` appended.
std::string default_sidecar_path(const std::string& output);

/// `dir/name.onnx` -> `dir/name.check.json`: where a failed check's figures go without --report.
std::string default_check_report_path(const std::string& output);

/// The figures of every check stage among the state's stage entries ({label, pass, record}),
/// each with its stage label and data folder: the state's "checks". Empty when no check stage ran.
nlohmann::ordered_json collect_checks(const nlohmann::ordered_json& stages);

struct SidecarRecord {
  std::string input_path, input_sha256, output_path, output_sha256;
  uint64_t input_size = 0;
  std::string pipeline;                                      // canonical pipeline text
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();  // every check stage's figures
  nlohmann::ordered_json escalation;                         // configurations a budget rejected (or null)
  double seconds = 0;                                        // volatile: wall time of the run
  nlohmann::ordered_json stage_seconds = nlohmann::ordered_json::object();  // volatile: label -> s
};

/// The state object. Volatile fields (differ between identical runs): everything under "timings".
nlohmann::ordered_json make_sidecar(const SidecarRecord& r);
/// Serialized text: 2-space indented, trailing newline.
std::string dump_sidecar(const nlohmann::ordered_json& j);

/// Reads a state file for replay. Throws ModelError when it is missing, not JSON, not an mcc
/// state, or written by a newer schema version.
nlohmann::ordered_json read_sidecar(const std::string& path);

}  // namespace mcc::io
