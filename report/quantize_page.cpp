// The HTML report of `mcc quantize --html` (see quantize_html.h).
#include "report/quantize_page.h"

#include <algorithm>
#include <filesystem>

#include "report/comparison_page.h"
#include "report/html_escape.h"
#include "io/sidecar.h"
#include "ir/errors.h"
#include "ir/sample_data.h"
#include "transforms/quantize/calibration.h"

namespace fs = std::filesystem;

namespace mcc::report {
namespace {

using json = nlohmann::ordered_json;

/// "budget: out top1_agreement >= 0.99; judged on 20 held-back calibration sample(s) of DIR (a to b)".
std::string describe_budget(const json& record, const std::vector<std::string>& dirs, size_t rejected) {
  std::string s;
  for (const auto& c : record["checks"]) {
    if (!c.contains("threshold") || !c["threshold"].is_number()) continue;
    s += (s.empty() ? "budget: " : ", ") + c.value("output", "") + " " + c.value("metric", "") +
         (c.value("metric", "") == "top1_drop_points" ? " <= " : " >= ") + fmt_g(c["threshold"].get<double>(), 6);
  }
  const json& data = record["data"];
  const bool held_back = data.value("holdout", int64_t{0}) > 0;
  s += (s.empty() ? "" : "; ") + std::string("judged on ") + std::to_string(dirs.size()) +
       (held_back ? " held-back calibration" : "") + " sample(s) of " + data.value("folder", "");
  if (!dirs.empty())
    s += " (" + fs::path(dirs.front()).filename().string() +
         (dirs.size() > 1 ? " to " + fs::path(dirs.back()).filename().string() : "") + ")";
  if (rejected) s += "; accepted after " + std::to_string(rejected) + " rejected configuration(s) (sidecar: escalation)";
  return s;
}

}  // namespace

void write_quantize_html(const std::string& path, const std::string& input, const std::string& output,
                         const std::string& sidecar, int threads) {
  const json state = io::read_sidecar(sidecar);
  const json* record = nullptr;
  if (state.contains("stages"))
    for (const auto& s : state["stages"])
      if (s.value("pass", "") == "check" && s.contains("record") && s["record"].contains("data")) record = &s["record"];
  if (!record) throw UsageError(sidecar + ": no self-check was recorded, so --html has no verdict or samples to show");

  // The check's samples: the folder's last `holdout` (all when 0), the first `samples` of those.
  const json& data = (*record)["data"];
  const std::string folder = data.value("folder", "");
  const std::vector<std::string> dirs =
      transforms::quantize::held_back_sample_dirs(folder, static_cast<size_t>(data.value("holdout", int64_t{0})),
                                                  static_cast<size_t>(data.value("samples", int64_t{0})));
  if (transforms::quantize::hash_sample_files(dirs) != data.value("sha256", ""))
    throw ModelError(folder + ": the samples differ from those the self-check judged (sha256); --html needs them unchanged");

  const size_t rejected = state.contains("escalation") && state["escalation"].is_array() ? state["escalation"].size() : 0;
  ComparisonHtmlInput in;
  in.title = "mcc quantize";
  in.model = output;
  in.reference = input;
  in.sample_dirs = dirs;
  in.threads = threads;
  in.verdict = json{{"model", output},
                    {"source", input},
                    {"rules", describe_budget(*record, dirs, rejected)},
                    {"samples", dirs.size()},
                    {"passed", record->value("verdict", "") == "pass"},
                    {"undecided", record->value("verdict", "") == "undecided"},
                    {"checks", (*record)["checks"]}};
  write_comparison_html(path, in);
}

}  // namespace mcc::report
