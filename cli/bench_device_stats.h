// What `mcc bench` adds for a backend other than the cpu: where the nodes ran (the plan-time
// placement with each cpu fallback's reason) and what moving data cost, measured by the
// executor over every run. Not used for the cpu backend (nothing moves there).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "backends/executor.h"

namespace mcc::cli {

/// {"placement": {...as mcc inspect --backend...}, "device_stats": {per-run transfers, bytes, ms,
/// initializer uploads}}. `runs`: how many runs the executor's stats cover (warm-up included).
nlohmann::ordered_json bench_device_stats(const backends::Executor& exec, int runs);
/// The same as text lines for the human-readable report.
std::string render_bench_device_stats(const nlohmann::ordered_json& j);

}  // namespace mcc::cli
