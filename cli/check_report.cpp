// Verdict lines and the sidecar's "checks" list (see check_report.h).
#include "cli/check_report.h"

#include <cstdio>
#include <filesystem>

#include "io/terminal.h"

namespace mcc::cli {
namespace {

std::string num(const nlohmann::ordered_json& v) {
  if (!v.is_number()) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v.get<double>());
  return b;
}

std::string verdict_word(const std::string& v) {
  if (v == "pass") return "PASS";
  if (v == "fail") return "FAIL";
  return v;
}

}  // namespace

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

void print_check_lines(const nlohmann::ordered_json& record) {
  if (!record.is_object() || !record.contains("checks")) return;
  const auto& data = record.value("data", nlohmann::ordered_json::object());
  const bool held_back = data.value("holdout", 0) > 0;
  for (const auto& c : record["checks"]) {
    const std::string metric = c.value("metric", "");
    const std::string out = c.value("output", "");
    if (metric == "none") {
      io::print_out("check: output '%s' not measured (%s)\n", out.c_str(), c.value("why", "").c_str());
      continue;
    }
    const bool lower = metric == "top1_drop_points";
    std::string line = "check: output '" + out + "' " + metric + " " + num(c["value"]);
    if (c.contains("threshold") && c["threshold"].is_number()) line += (lower ? " <= " : " >= ") + num(c["threshold"]);
    line += " on " + std::to_string(c.value("samples", 0)) + (held_back ? " held-back" : "") + " sample(s)";
    if (c.contains("worst_sample_cosine")) line += " (worst sample " + num(c["worst_sample_cosine"]) + ")";
    if (lower) line += " (top-1 " + num(c["top1"]) + "% vs " + num(c["reference_top1"]) + "% for the input model)";
    io::print_out("%s: %s\n", line.c_str(), verdict_word(c.value("verdict", "")).c_str());
  }
  io::print_out("check: verdict %s\n", verdict_word(record.value("verdict", "")).c_str());
}

std::string default_check_report_path(const std::string& output) {
  std::filesystem::path p(output);
  if (p.extension() == ".onnx") p.replace_extension();
  return p.string() + ".check.json";
}

}  // namespace mcc::cli
