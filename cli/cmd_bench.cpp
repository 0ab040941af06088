// mcc bench: latency and throughput of a model on a backend: warm-up runs, then N timed runs on
// the same inputs (a data folder's first sample or seeded random inputs); prints median, p90,
// mean, min and max latency, throughput, thread count and peak RSS; on a backend other than the
// cpu also the node placement (cpu fallbacks with reasons) and the measured transfers.
#include <chrono>
#include <memory>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_kernels_info.h"
#include "backends/executor.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "io/files.h"
#include "io/json_text.h"
#include "io/samples.h"
#include "io/terminal.h"
#include "report/bench_report.h"

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
  nlohmann::ordered_json j{{"model", o.model}, {"backend", o.backend}, {"threads", exec.threads()},
                           {"warmup", o.warmup}, {"runs", o.runs}, {"inputs", o.inputs.empty() ? "random" : o.inputs}};
  j.update(report::latency_json(ms));
  j["peak_rss_mb"] = report::peak_rss_mb();
  const backends::cpu::CpuKernelsInfo cpu = backends::cpu::cpu_kernels_info();
  j["cpu"] = {{"model", cpu.cpu_model}, {"matmul_f32_isa", cpu.matmul_f32}, {"kernels_isa", cpu.kernels}, {"build_isa", cpu.build_isa}};
  if (o.raw) j["runs_ms"] = ms;
  if (&exec.backend() != &backends::cpu_backend()) j.update(report::bench_device_stats(exec, o.warmup + o.runs));
  if (o.profile_top > 0) j.update(report::profile_json(exec, o.warmup + o.runs, o.profile_top));
  if (!o.report.empty()) io::write_file_atomically(o.report, io::dump_json(j, 2) + "\n");
  if (o.json) {
    io::print_requested(io::dump_json(j, 2) + "\n");
  } else {
    io::print_out("%s", report::render_bench(j).c_str());
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
