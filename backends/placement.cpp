// Plan-time placement and transfer counting.
#include "backends/placement.h"

#include <set>
#include <unordered_map>

#include "backends/executor.h"

namespace mcc::backends {

std::vector<ir::DType> static_input_dtypes(const ir::Node& n, const ir::ShapeInference& types) {
  std::vector<ir::DType> out;
  out.reserve(n.inputs.size());
  for (const ir::Value* v : n.inputs) {
    if (!v) { out.push_back(ir::DType::Undefined); continue; }
    ir::DType dt = types.of(v).dtype;
    if (dt == ir::DType::Undefined && v->has_type && v->type_passthrough.bytes.empty()) dt = v->dtype;
    out.push_back(dt);
  }
  return out;
}

NodePlacement place_node(const ir::Node& n, const Backend& requested, const ir::ShapeInference& types) {
  const Backend& cpu = cpu_backend();
  if (&requested == &cpu) return {&cpu, {}};
  const std::vector<ir::DType> dts = static_input_dtypes(n, types);
  Support s = requested.supports(n, dts);
  if (s.ok) return {&requested, {}};
  return {&cpu, s.reason.empty() ? std::string("not supported") : s.reason};
}

namespace {

struct Planner {
  const Backend& requested;
  const ir::ShapeInference& types;
  PlacementReport& report;
  int64_t on_requested = 0, on_cpu = 0;
  std::set<const ir::Value*> uploaded;

  // Where each value of g lives after its producer ran (graph inputs: host).
  void graph(const ir::Graph& g, bool sub) {
    std::unordered_map<const ir::Value*, ir::Device> home;
    std::set<std::pair<const ir::Value*, bool>> moved;  // (value, to host?)
    for (const ir::Node* n : g.nodes()) {
      const NodePlacement p = place_node(*n, requested, types);
      ++report.nodes;
      if (sub) ++report.subgraph_nodes;
      (p.backend == &requested ? on_requested : on_cpu) += 1;
      if (p.backend != &requested)
        report.fallbacks.push_back({n->name, n->op_type, p.reason, sub});
      const std::vector<size_t> host_in = p.backend->host_inputs(*n);
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const ir::Value* v = n->inputs[i];
        if (!v) continue;
        bool want_host = p.backend->device().is_host();
        for (size_t h : host_in) want_host = want_host || h == i;
        auto it = home.find(v);
        const bool on_host = it == home.end() || it->second.is_host();
        if (on_host == want_host) continue;
        if (it == home.end() && v->initializer && !want_host) {
          uploaded.insert(v);
          continue;
        }
        if (moved.insert({v, want_host}).second && !sub) ++report.transfers;
      }
      for (const ir::Value* o : n->outputs)
        if (o) home[o] = p.backend->device();
      for (const ir::Graph* s : n->subgraphs()) graph(*s, true);
    }
    if (sub) return;
    for (const ir::Value* o : g.outputs) {
      auto it = home.find(o);
      if (o && it != home.end() && !it->second.is_host() && moved.insert({o, true}).second) ++report.transfers;
    }
  }
};

}  // namespace

PlacementReport plan_placement(const ir::Model& m, const Backend& requested) {
  PlacementReport r;
  r.requested = std::string(requested.name());
  if (!m.graph) return r;
  const ir::ShapeInference types(m);
  Planner p{requested, types, r};
  p.graph(*m.graph, false);
  r.uploaded_initializers = static_cast<int64_t>(p.uploaded.size());
  r.nodes_per_backend.push_back({std::string(requested.name()), p.on_requested});
  if (&requested != &cpu_backend()) r.nodes_per_backend.push_back({"cpu", p.on_cpu});
  return r;
}

}  // namespace mcc::backends
