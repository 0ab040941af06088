// The placement section of `mcc inspect --backend NAME`: where each node would run and why a node
// falls back to the cpu, planned without a device (backends/placement.h).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "backends/placement.h"

namespace mcc::report {

/// {"backend", "nodes", "on_backend": {name: count}, "fraction_on_requested", "subgraph_nodes", "shape_computations_on_cpu",
///  "transfers_per_run", "initializers_uploaded_once", "fallbacks": [{"node","op","reason","in_subgraph"}]}
nlohmann::ordered_json placement_json(const backends::PlacementReport& r);
/// A few lines for the text summary; lists at most `max_fallbacks` fallback nodes.
std::string render_placement(const backends::PlacementReport& r, size_t max_fallbacks = 20);

}  // namespace mcc::report
