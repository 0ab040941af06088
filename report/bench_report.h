// What `mcc bench` reports: the latency figures of the timed runs, the time per op type and the
// slowest nodes (--profile), and, on a backend other than the cpu, where the nodes ran (the
// plan-time placement with each cpu fallback's reason) and what moving data cost, measured by the
// executor over every run; as JSON (--json, --report) and as text.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/executor.h"

namespace mcc::report {

/// {median_ms, p90_ms, mean_ms, min_ms, max_ms, throughput_per_s} of the timed runs' latencies
/// (percentiles interpolated linearly; throughput: runs per second at the median). `ms` is not empty.
nlohmann::ordered_json latency_json(const std::vector<double>& ms);

/// {profile_by_op: [{op, nodes, ms_per_run, share}], profile_by_node: [{node, op, ms_per_run}]}: the
/// `top` op types and nodes that took the most time, averaged over `runs` (an executor with profiling on).
nlohmann::ordered_json profile_json(const backends::Executor& exec, int runs, int top);

/// {"placement": {...as mcc inspect --backend...}, "device_stats": {per-run transfers, bytes, ms,
/// initializer uploads}}. `runs`: how many runs the executor's stats cover (warm-up included).
nlohmann::ordered_json bench_device_stats(const backends::Executor& exec, int runs);
/// The device part as text lines.
std::string render_bench_device_stats(const nlohmann::ordered_json& j);

/// This process's peak resident set in MB: VmHWM from /proc/self/status (it starts again at
/// exec), else getrusage's ru_maxrss, which on Linux keeps the watermark of the process that
/// forked and exec'd mcc (a large parent would show as mcc's peak).
double peak_rss_mb();

/// The whole text report of a bench result (model, backend, threads, warmup, runs, the latency
/// figures, peak_rss_mb; and the device and profile sections when present).
std::string render_bench(const nlohmann::ordered_json& j);

}  // namespace mcc::report
