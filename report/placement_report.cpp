// JSON and text rendering of a placement plan.
#include "report/placement_report.h"

#include <sstream>

namespace mcc::report {

namespace {
double fraction_on_requested(const backends::PlacementReport& r) {
  if (r.nodes == 0 || r.nodes_per_backend.empty()) return 1.0;
  return static_cast<double>(r.nodes_per_backend.front().nodes) / static_cast<double>(r.nodes);
}
}  // namespace

nlohmann::ordered_json placement_json(const backends::PlacementReport& r) {
  nlohmann::ordered_json j;
  j["backend"] = r.requested;
  j["nodes"] = r.nodes;
  nlohmann::ordered_json per = nlohmann::ordered_json::object();
  for (const auto& c : r.nodes_per_backend) per[c.backend] = c.nodes;
  j["on_backend"] = per;
  j["fraction_on_requested"] = fraction_on_requested(r);
  j["subgraph_nodes"] = r.subgraph_nodes;
  j["shape_computations_on_cpu"] = r.shape_computations_on_cpu;
  j["transfers_per_run"] = r.transfers;
  j["initializers_uploaded_once"] = r.uploaded_initializers;
  nlohmann::ordered_json fb = nlohmann::ordered_json::array();
  for (const auto& f : r.fallbacks)
    fb.push_back({{"node", f.node}, {"op", f.op}, {"reason", f.reason}, {"in_subgraph", f.in_subgraph}});
  j["fallbacks"] = fb;
  return j;
}

std::string render_placement(const backends::PlacementReport& r, size_t max_fallbacks) {
  std::ostringstream os;
  os << "placement on " << r.requested << ":";
  for (const auto& c : r.nodes_per_backend) os << " " << c.backend << " " << c.nodes;
  os << " of " << r.nodes << " nodes (" << static_cast<int>(fraction_on_requested(r) * 1000) / 10.0 << "% on "
     << r.requested << ")";
  if (r.subgraph_nodes) os << ", " << r.subgraph_nodes << " in subgraph bodies";
  if (r.shape_computations_on_cpu)
    os << ", " << r.shape_computations_on_cpu << " shape computations kept on the cpu";
  os << "; " << r.transfers << " transfers per run, " << r.uploaded_initializers << " initializers uploaded once\n";
  for (size_t i = 0; i < r.fallbacks.size() && i < max_fallbacks; ++i) {
    const auto& f = r.fallbacks[i];
    os << "  cpu fallback: " << (f.node.empty() ? "(unnamed)" : f.node) << " (" << f.op << ")"
       << (f.in_subgraph ? " in a subgraph" : "") << ": " << f.reason << "\n";
  }
  if (r.fallbacks.size() > max_fallbacks)
    os << "  ... and " << (r.fallbacks.size() - max_fallbacks) << " more (see --json)\n";
  return os.str();
}

}  // namespace mcc::report
