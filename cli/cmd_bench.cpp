// mcc bench: latency and throughput of a model on a backend: warm-up runs, then N timed runs on
// the same inputs (a data folder's first sample or seeded random inputs); prints median, p90,
// mean, min and max latency, throughput, thread count and peak RSS; on a backend other than the
// cpu also the node placement (cpu fallbacks with reasons) and the measured transfers.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "backends/executor.h"
#include "cli/bench_device_stats.h"
#include "io/json_text.h"
#include "io/terminal.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "io/files.h"
#include "io/samples.h"

namespace mcc::cli {

struct BenchOptions {
  std::string model, inputs, backend = "cpu", report;
  int64_t random_seed = 0;
  int threads = 0, warmup = 3, runs = 20;
  std::vector<std::string> dims, shapes;
  bool json = false;
  int profile_top = 0;  // print the N op types (and nodes) that take the most time
  bool raw = false;     // include every run's latency in the JSON ("runs_ms")
};

namespace {
/// This process's peak resident set in MB: VmHWM from /proc/self/status (it starts again at
/// exec), else getrusage's ru_maxrss, which on Linux keeps the watermark of the process that
/// forked and exec'd mcc (a large parent would show as mcc's peak).
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
}  // namespace

int run_bench(const BenchOptions& o) {
  if (o.runs < 1) throw UsageError("--runs " + std::to_string(o.runs) + ": must be at least 1");
  if (o.warmup < 0) throw UsageError("--warmup " + std::to_string(o.warmup) + ": must be 0 or more");
  io::ShapeOverrides shape_over;
  for (const auto& d : o.dims) io::parse_dim_flag(d, shape_over);
  for (const auto& s : o.shapes) io::parse_shape_flag(s, shape_over);
  io::InputModel model = io::load_input_model(o.model, false, false);
  const ir::Graph& g = *model.model.graph;
  ir::BoundSample s = o.inputs.empty() ? io::random_sample(g, shape_over, static_cast<uint64_t>(o.random_seed), 0)
                                       : ir::bind_sample(g, ir::load_sample(io::sample_dirs(o.inputs, 1).front(), false));
  std::vector<std::pair<std::string, backends::RValue>> feeds;
  for (auto& [n, t] : s.feeds) feeds.emplace_back(n, backends::RValue::of(t));

  auto eopts = exec_options(o.backend, o.threads);
  eopts.profile = o.profile_top > 0;
  backends::Executor exec(model.model, eopts);
  for (int i = 0; i < o.warmup; ++i) exec.run(feeds);
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(o.runs));
  for (int i = 0; i < o.runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    exec.run(feeds);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
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
  const double peak_mb = peak_rss_mb();

  nlohmann::ordered_json j{{"model", o.model}, {"backend", o.backend}, {"threads", exec.threads()},
                           {"warmup", o.warmup}, {"runs", o.runs}, {"inputs", o.inputs.empty() ? "random" : o.inputs},
                           {"median_ms", pct(0.5)}, {"p90_ms", pct(0.9)}, {"mean_ms", mean},
                           {"min_ms", sorted.front()}, {"max_ms", sorted.back()},
                           {"throughput_per_s", 1000.0 / pct(0.5)}, {"peak_rss_mb", peak_mb}};
  if (o.raw) j["runs_ms"] = ms;
  const bool on_device = &exec.backend() != &backends::cpu_backend();
  if (on_device) j.update(bench_device_stats(exec, o.warmup + o.runs));
  if (o.profile_top > 0) {
    // Time per op type and the slowest nodes, averaged over warm-up and timed runs.
    const double runs = static_cast<double>(o.warmup + o.runs);
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
    for (size_t i = 0; i < ops.size() && i < static_cast<size_t>(o.profile_top); ++i)
      pj.push_back({{"op", ops[i].first}, {"nodes", ops[i].second.second}, {"ms_per_run", ops[i].second.first},
                    {"share", total > 0 ? ops[i].second.first / total : 0.0}});
    j["profile_by_op"] = pj;
    nlohmann::ordered_json nj = nlohmann::ordered_json::array();
    for (size_t i = 0; i < nodes.size() && i < static_cast<size_t>(o.profile_top); ++i)
      nj.push_back({{"node", nodes[i].node->name}, {"op", nodes[i].node->op_type}, {"ms_per_run", nodes[i].seconds / runs * 1000.0}});
    j["profile_by_node"] = nj;
  }
  if (!o.report.empty()) io::write_file_atomically(o.report, io::dump_json(j, 2) + "\n");
  if (o.json) {
    std::cout << io::dump_json(j, 2) << "\n";
  } else {
    io::print_out("%s on %s, %d thread(s), %d warm-up + %d runs\n", o.model.c_str(), o.backend.c_str(), exec.threads(), o.warmup, o.runs);
    io::print_out("latency ms: median %.3f  p90 %.3f  mean %.3f  min %.3f  max %.3f\n", pct(0.5), pct(0.9), mean,
                sorted.front(), sorted.back());
    io::print_out("throughput: %.1f runs/s   peak RSS: %.1f MB\n", 1000.0 / pct(0.5), peak_mb);
    if (on_device) io::print_out("%s", render_bench_device_stats(j).c_str());
    if (j.contains("profile_by_op")) {
      io::print_out("\n%-24s %6s %12s %7s\n", "op", "nodes", "ms/run", "share");
      for (const auto& e : j["profile_by_op"])
        io::print_out("%-24s %6d %12.3f %6.1f%%\n", e["op"].get<std::string>().c_str(), e["nodes"].get<int>(),
                    e["ms_per_run"].get<double>(), 100.0 * e["share"].get<double>());
      io::print_out("\n%-40s %-20s %12s\n", "node", "op", "ms/run");
      for (const auto& e : j["profile_by_node"])
        io::print_out("%-40s %-20s %12.3f\n", e["node"].get<std::string>().c_str(), e["op"].get<std::string>().c_str(),
                    e["ms_per_run"].get<double>());
    }
  }
  return 0;
}

void add_bench_command(CLI::App& app, CommandSlot& slot) {
  auto o = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand("bench", "Measure latency and throughput of a model on a backend");
  sub->add_option("model", o->model, "Model to run (.onnx)")->required();
  sub->add_option("--inputs", o->inputs, "Folder of samples (the first one is used); default: random inputs");
  sub->add_option("--random", o->random_seed, "Seed of the random inputs (default 0)");
  sub->add_option("--dim", o->dims, "Set a symbolic dim: name=value (repeatable)");
  sub->add_option("--shape", o->shapes, "Set an input shape: input=1x3x224x224 (repeatable)");
  sub->add_option("--warmup", o->warmup, "Warm-up runs (default 3)");
  sub->add_option("--runs", o->runs, "Timed runs (default 20)");
  add_backend_flag(sub, o->backend);
  add_threads_flag(sub, o->threads);
  add_report_flag(sub, o->report, "the result");
  add_json_flag(sub, o->json, "the result");
  sub->add_flag("--raw", o->raw, "Include every timed run's latency in the JSON (runs_ms)");
  sub->add_option("--profile", o->profile_top, "Also print the N op types and nodes that take the most time");
  sub->footer("Examples:\n  mcc bench model.onnx --threads 1 --runs 50\n  mcc bench model.onnx --dim batch=8 --json");
  sub->callback([o, &slot] { slot.set([o] { return run_bench(*o); }); });
}

}  // namespace mcc::cli
