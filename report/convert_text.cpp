// What mcc convert and mcc quantize print (see convert_text.h).
#include "report/convert_text.h"

#include <cstdio>

#include "io/terminal.h"
#include "judge/interval.h"
#include "judge/probability_outputs.h"

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
  if (v == "undecided") return "UNDECIDED";
  return v;
}

}  // namespace

void print_check_lines(const nlohmann::ordered_json& record, size_t rejected) {
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
    const bool lower = metric == "top1_drop_points" || metric == "perplexity_ratio" || metric == "kl_mean";
    std::string line = "check: output '" + out + "' " + metric + " " + num(c["value"]);
    if (c.contains("interval")) line += " " + judge::interval_text(c["interval"]);
    if (c.contains("threshold") && c["threshold"].is_number()) line += (lower ? " <= " : " >= ") + num(c["threshold"]);
    line += " on " + (c.contains("tokens") ? std::to_string(c.value("tokens", int64_t{0})) + " tokens of " : std::string()) +
            std::to_string(c.value("samples", 0)) + (held_back ? " held-back" : "") + " sample(s)";
    if (c.contains("worst_sample_cosine")) line += " (worst sample " + num(c["worst_sample_cosine"]) + ")";
    if (c.contains("samples_nothing_in_both"))
      line += " (" + num(c["samples_nothing_in_both"]) + " with every probability under " +
              num(judge::kNothingProbability) + " in both: agree)";
    if (metric == "top1_drop_points") line += " (top-1 " + num(c["top1"]) + "% vs " + num(c["reference_top1"]) + "% for the input model)";
    io::print_out("%s: %s\n", line.c_str(), verdict_word(c.value("verdict", "")).c_str());
  }
  const std::string after = rejected ? " (after " + std::to_string(rejected) + " rejected configuration(s); sidecar: escalation)" : "";
  io::print_out("check: verdict %s%s\n", verdict_word(record.value("verdict", "")).c_str(), after.c_str());
}


std::string human_bytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) v /= 1024.0, ++u;
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %s", v, units[u]);
  return b;
}

void print_convert_summary(const ConvertSummary& s) {
  std::string files;
  for (size_t i = 0; i < s.written.size(); ++i)
    files += (i == 0 ? "" : i + 1 == s.written.size() ? " and " : ", ") + s.written[i];
  io::print_out("wrote %s\n", files.c_str());
  const double share = s.input_bytes ? 100.0 * static_cast<double>(s.output_bytes) / static_cast<double>(s.input_bytes) : 100.0;
  io::print_out("size: %s -> %s (%.0f %% of the input)\n", human_bytes(s.input_bytes).c_str(),
                human_bytes(s.output_bytes).c_str(), share);
  for (const auto& record : s.check_records) {
    if (s.replayed) io::print_out("check: replayed the recorded verdict (replay runs no data)\n");
    print_check_lines(record, s.rejected);
  }
  io::print_out("time: %.2f s\n", s.seconds);
}

}  // namespace mcc::report
