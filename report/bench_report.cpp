// What `mcc bench` reports (see bench_report.h).
#include "report/bench_report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "backends/placement.h"
#include "report/placement_report.h"

namespace mcc::report {

nlohmann::ordered_json latency_json(const std::vector<double>& ms) {
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) {
    const double idx = p * static_cast<double>(sorted.size() - 1);
    const size_t lo = static_cast<size_t>(idx);
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (idx - static_cast<double>(lo));
  };
  double mean = 0;
  for (double v : ms) mean += v;
  mean /= static_cast<double>(ms.size());
  return {{"median_ms", pct(0.5)}, {"p90_ms", pct(0.9)}, {"mean_ms", mean},
          {"min_ms", sorted.front()}, {"max_ms", sorted.back()}, {"throughput_per_s", 1000.0 / pct(0.5)}};
}

nlohmann::ordered_json profile_json(const backends::Executor& exec, int runs_in, int top) {
  const double runs = static_cast<double>(runs_in > 0 ? runs_in : 1);
  std::map<std::string, std::pair<double, int>> by_op;
  double total = 0;
  for (const auto& t : exec.node_times()) {
    auto& e = by_op[t.node->op_type];
    e.first += t.seconds / runs * 1000.0;
    ++e.second;
    total += t.seconds / runs * 1000.0;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> ops(by_op.begin(), by_op.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  auto nodes = exec.node_times();
  std::stable_sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  nlohmann::ordered_json pj = nlohmann::ordered_json::array();
  for (size_t i = 0; i < ops.size() && i < static_cast<size_t>(top); ++i)
    pj.push_back({{"op", ops[i].first}, {"nodes", ops[i].second.second}, {"ms_per_run", ops[i].second.first},
                  {"share", total > 0 ? ops[i].second.first / total : 0.0}});
  nlohmann::ordered_json nj = nlohmann::ordered_json::array();
  for (size_t i = 0; i < nodes.size() && i < static_cast<size_t>(top); ++i)
    nj.push_back({{"node", nodes[i].node->name}, {"op", nodes[i].node->op_type}, {"ms_per_run", nodes[i].seconds / runs * 1000.0}});
  return {{"profile_by_op", pj}, {"profile_by_node", nj}};
}

double peak_rss_mb() {
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long kb = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    std::fclose(f);
    if (kb >= 0) return static_cast<double>(kb) / 1024.0;
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

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

std::string render_bench(const nlohmann::ordered_json& j) {
  std::string out;
  char line[512];
  out += j["model"].get<std::string>() + " on " + j["backend"].get<std::string>() + ", " +
         std::to_string(j["threads"].get<int>()) + " thread(s), " + std::to_string(j["warmup"].get<int>()) + " warm-up + " +
         std::to_string(j["runs"].get<int>()) + " runs\n";
  std::snprintf(line, sizeof line, "latency ms: median %.3f  p90 %.3f  mean %.3f  min %.3f  max %.3f\n",
                j["median_ms"].get<double>(), j["p90_ms"].get<double>(), j["mean_ms"].get<double>(),
                j["min_ms"].get<double>(), j["max_ms"].get<double>());
  out += line;
  std::snprintf(line, sizeof line, "throughput: %.1f runs/s   peak RSS: %.1f MB\n", j["throughput_per_s"].get<double>(),
                j["peak_rss_mb"].get<double>());
  out += line;
  if (j.contains("cpu")) {
    const auto& c = j["cpu"];
    out += "cpu: " + c["model"].get<std::string>() + "; f32 matmul kernels " + c["matmul_f32_isa"].get<std::string>() +
           ", conv/pool/norm/int8 GEMM kernels " + c.value("kernels_isa", std::string("?")) +
           " (both chosen at run time), int8 conv epilogues built for " + c["build_isa"].get<std::string>() + "\n";
  }
  if (j.contains("device_stats")) out += render_bench_device_stats(j);
  if (j.contains("profile_by_op")) {
    std::snprintf(line, sizeof line, "\n%-24s %6s %12s %7s\n", "op", "nodes", "ms/run", "share");
    out += line;
    for (const auto& e : j["profile_by_op"]) {
      std::snprintf(line, sizeof line, "%-24s %6d %12.3f %6.1f%%\n", e["op"].get<std::string>().c_str(), e["nodes"].get<int>(),
                    e["ms_per_run"].get<double>(), 100.0 * e["share"].get<double>());
      out += line;
    }
    std::snprintf(line, sizeof line, "\n%-40s %-20s %12s\n", "node", "op", "ms/run");
    out += line;
    for (const auto& e : j["profile_by_node"]) {
      std::string node = e["node"].get<std::string>(), op = e["op"].get<std::string>();
      node.resize(std::max<size_t>(node.size(), 40), ' ');
      op.resize(std::max<size_t>(op.size(), 20), ' ');
      std::snprintf(line, sizeof line, " %12.3f\n", e["ms_per_run"].get<double>());
      out += node + " " + op + line;
    }
  }
  return out;
}

}  // namespace mcc::report
