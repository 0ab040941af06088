// Sidecar state: path conventions, building (its checks list too), serializing and validating the JSON record.
#include "io/sidecar.h"

#include <filesystem>

#include "io/files.h"
#include "io/json_text.h"
#include "ir/errors.h"

namespace mcc::io {

std::string default_sidecar_path(const std::string& output) {
  const std::string ext = ".onnx";
  if (output.size() > ext.size() && output.compare(output.size() - ext.size(), ext.size(), ext) == 0)
    return output.substr(0, output.size() - ext.size()) + ".mcc.json";
  return output + ".mcc.json";
}

std::string default_check_report_path(const std::string& output) {
  std::filesystem::path p(output);
  if (p.extension() == ".onnx") p.replace_extension();
  return p.string() + ".check.json";
}

nlohmann::ordered_json collect_checks(const nlohmann::ordered_json& stages) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : stages) {
    if (!s.is_object() || s.value("pass", "") != "check" || !s.contains("record")) continue;
    const auto& rec = s["record"];
    if (!rec.is_object() || !rec.contains("checks") || !rec["checks"].is_array()) continue;
    for (const auto& c : rec["checks"]) {
      nlohmann::ordered_json e{{"stage", s.value("label", "")}};
      e.update(c);
      if (rec.contains("data") && rec["data"].is_object()) e["data"] = rec["data"].value("folder", "");
      out.push_back(std::move(e));
    }
  }
  return out;
}

nlohmann::ordered_json make_sidecar(const SidecarRecord& r) {
  nlohmann::ordered_json j;
  j["schema_version"] = kSidecarSchemaVersion;
  j["tool"] = {{"name", "mcc"}, {"version", MCC_VERSION}};
  j["input"] = {{"path", r.input_path}, {"size", r.input_size}, {"sha256", r.input_sha256}};
  j["output"] = {{"path", r.output_path}, {"sha256", r.output_sha256}};
  j["pipeline"] = r.pipeline;
  j["stages"] = r.stages;
  if (!r.checks.empty()) j["checks"] = r.checks;
  if (!r.escalation.is_null()) j["escalation"] = r.escalation;
  j["timings"] = {{"total_seconds", r.seconds}, {"stages", r.stage_seconds}};
  return j;
}

std::string dump_sidecar(const nlohmann::ordered_json& j) { return dump_json(j, 2) + "\n"; }

nlohmann::ordered_json read_sidecar(const std::string& path) {
  const std::string text = read_file(path);
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(path + ": not a valid JSON state file (" + e.what() + "); pass a .mcc.json written by mcc");
  }
  try {
    unescape_json_strings(j);
  } catch (const ModelError& e) {
    throw ModelError(path + ": " + e.what());
  }
  if (!j.is_object() || !j.contains("schema_version") || !j["schema_version"].is_number_integer() ||
      !j.contains("input") || !j["input"].is_object() || !j["input"].contains("sha256") ||
      !j["input"]["sha256"].is_string() || !j.contains("pipeline") || !j["pipeline"].is_string())
    throw ModelError(path + ": not an mcc state file (schema_version, input.sha256 or pipeline missing); "
                     "pass a .mcc.json written by mcc");
  const auto v = j["schema_version"].get<int64_t>();
  if (v > kSidecarSchemaVersion)
    throw ModelError(path + ": written by a newer mcc (schema_version " + std::to_string(v) + ", this build reads " +
                     std::to_string(kSidecarSchemaVersion) + "); upgrade mcc");
  if (v < 1) throw ModelError(path + ": invalid schema_version " + std::to_string(v) + "; pass a state written by mcc");
  return j;
}

}  // namespace mcc::io
