// Placement and transfer statistics of `mcc bench` on a non-cpu backend.
#include "cli/bench_device_stats.h"

#include <cstdio>

#include "backends/placement.h"
#include "cli/placement_report.h"

namespace mcc::cli {

nlohmann::ordered_json bench_device_stats(const backends::Executor& exec, int runs) {
  const backends::Executor::Stats& s = exec.stats();
  const double n = runs > 0 ? static_cast<double>(runs) : 1.0;
  nlohmann::ordered_json j;
  j["placement"] = placement_json(backends::plan_placement(exec.model(), exec.backend()));
  j["device_stats"] = {
      {"nodes_on_backend", s.nodes_on_requested},
      {"nodes_on_cpu", s.nodes_on_cpu},
      {"runs", runs},
      {"transfers_per_run", static_cast<double>(s.transfers) / n},
      {"transfer_bytes_per_run", static_cast<double>(s.transfer_bytes) / n},
      {"transfer_ms_per_run", s.transfer_seconds * 1000.0 / n},
      {"initializer_uploads", s.initializer_uploads},
      {"initializer_bytes", s.initializer_bytes},
  };
  return j;
}

std::string render_bench_device_stats(const nlohmann::ordered_json& j) {
  const auto& p = j["placement"];
  const auto& d = j["device_stats"];
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "nodes: %s %lld, cpu %lld (of %lld; %zu cpu fallbacks)\n",
                p["backend"].get<std::string>().c_str(), static_cast<long long>(d["nodes_on_backend"].get<int64_t>()),
                static_cast<long long>(d["nodes_on_cpu"].get<int64_t>()),
                static_cast<long long>(p["nodes"].get<int64_t>()), p["fallbacks"].size());
  out += line;
  size_t shown = 0;
  for (const auto& f : p["fallbacks"]) {
    if (++shown > 10) {
      out += "  ... " + std::to_string(p["fallbacks"].size() - 10) + " more (--json lists them all)\n";
      break;
    }
    const std::string node = f["node"].get<std::string>();
    out += "  cpu fallback: " + (node.empty() ? std::string("(unnamed)") : node) + " (" + f["op"].get<std::string>() +
           "): " + f["reason"].get<std::string>() + "\n";
  }
  std::snprintf(line, sizeof line,
                "transfers per run: %.1f (%.3f MB, %.3f ms); initializers uploaded once: %lld (%.3f MB)\n",
                d["transfers_per_run"].get<double>(), d["transfer_bytes_per_run"].get<double>() / 1e6,
                d["transfer_ms_per_run"].get<double>(), static_cast<long long>(d["initializer_uploads"].get<int64_t>()),
                static_cast<double>(d["initializer_bytes"].get<int64_t>()) / 1e6);
  out += line;
  return out;
}

}  // namespace mcc::cli
