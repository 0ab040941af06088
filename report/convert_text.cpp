// What mcc convert and mcc quantize print (see convert_text.h).
#include "report/convert_text.h"

#include <cstdio>

#include "io/terminal.h"

namespace mcc::report {
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


}  // namespace mcc::report
