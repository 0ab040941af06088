// Plan-time placement (per node, then shape computations back to the cpu) and transfer counting.
#include "backends/placement.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <unordered_map>

#include "backends/executor.h"

namespace mcc::backends {

std::vector<ir::DType> static_input_dtypes(const ir::Node& n, const ir::ElementTypes& types) {
  std::vector<ir::DType> out;
  out.reserve(n.inputs.size());
  for (const ir::Value* v : n.inputs) out.push_back(v ? types.of(v) : ir::DType::Undefined);
  return out;
}

NodePlacement place_node(const ir::Node& n, const Backend& requested, const ir::ElementTypes& types) {
  const Backend& cpu = cpu_backend();
  if (&requested == &cpu) return {&cpu, {}};
  const std::vector<ir::DType> dts = static_input_dtypes(n, types);
  Support s = requested.supports(n, dts);
  if (s.ok) return {&requested, {}};
  return {&cpu, s.reason.empty() ? std::string("not supported") : s.reason};
}

bool wants_host_input(const Backend& b, const ir::Node& n, size_t i) {
  if (b.device().is_host()) return true;
  const std::vector<size_t> h = b.host_inputs(n);
  return std::find(h.begin(), h.end(), i) != h.end();
}

bool shape_only_input(const Backend& b, const ir::Node& n, size_t i) {
  const std::vector<size_t> s = b.shape_only_inputs(n);
  return std::find(s.begin(), s.end(), i) != s.end();
}

namespace {

bool integer_like(ir::DType d) {
  return d == ir::DType::I64 || d == ir::DType::I32 || d == ir::DType::Bool;
}

struct Use {
  size_t node;
  size_t input;  // SIZE_MAX: used inside a subgraph body of the node, or a graph output
};

// A node on a device whose outputs only feed the host is moved to the cpu when that moves no
// float data: its outputs are integer (or it has no inputs: Constant), and every input it reads
// is integer, an initializer or graph input, or only looked at for its dims on the cpu.
bool better_on_cpu(const ir::Node& n, const std::vector<NodePlacement>& p,
                   const std::unordered_map<const ir::Value*, std::vector<Use>>& uses, const ir::ElementTypes& types,
                   const std::vector<const ir::Node*>& nodes) {
  const Backend& cpu = cpu_backend();
  bool has_inputs = false, all_int_out = true;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ir::Value* v = n.inputs[k];
    if (!v) continue;
    has_inputs = true;
    if (v->initializer || v->is_graph_input) continue;
    if (!integer_like(types.of(v)) && !shape_only_input(cpu, n, k)) return false;
  }
  if (!n.subgraphs().empty()) return false;
  for (const ir::Value* o : n.outputs) {
    if (!o) continue;
    all_int_out = all_int_out && integer_like(types.of(o));
    auto it = uses.find(o);
    if (it == uses.end() || it->second.empty()) return false;
    for (const Use& u : it->second) {
      if (u.input == SIZE_MAX) return false;
      const Backend& reader = *p[u.node].backend;
      if (!reader.device().is_host() && !wants_host_input(reader, *nodes[u.node], u.input)) return false;
    }
  }
  return all_int_out || !has_inputs;
}

}  // namespace

std::vector<NodePlacement> place_graph(const ir::Graph& g, const Backend& requested, const ir::ElementTypes& types) {
  const auto& order = g.nodes();
  const std::vector<const ir::Node*> nodes(order.begin(), order.end());
  std::vector<NodePlacement> p;
  p.reserve(nodes.size());
  for (const ir::Node* n : nodes) p.push_back(place_node(*n, requested, types));
  if (&requested == &cpu_backend()) return p;
  // MCC_SHAPES_ON_CPU=0 keeps every supported node on the requested backend (A/B comparisons).
  if (const char* e = std::getenv("MCC_SHAPES_ON_CPU"); e && std::string(e) == "0") return p;
  std::unordered_map<const ir::Value*, std::vector<Use>> uses;
  for (size_t j = 0; j < nodes.size(); ++j) {
    for (size_t k = 0; k < nodes[j]->inputs.size(); ++k)
      if (nodes[j]->inputs[k]) uses[nodes[j]->inputs[k]].push_back({j, k});
    for (const ir::Graph* s : nodes[j]->subgraphs()) {
      std::vector<const ir::Graph*> stack{s};
      while (!stack.empty()) {  // every value a body reads marks a use by node j
        const ir::Graph* b = stack.back();
        stack.pop_back();
        for (const ir::Node* bn : b->nodes()) {
          for (const ir::Value* v : bn->inputs) if (v) uses[v].push_back({j, SIZE_MAX});
          for (const ir::Graph* bs : bn->subgraphs()) stack.push_back(bs);
        }
        for (const ir::Value* v : b->outputs) if (v) uses[v].push_back({j, SIZE_MAX});
      }
    }
  }
  for (const ir::Value* o : g.outputs) if (o) uses[o].push_back({0, SIZE_MAX});
  for (size_t r = nodes.size(); r-- > 0;) {
    if (p[r].backend == &cpu_backend()) continue;
    if (better_on_cpu(*nodes[r], p, uses, types, nodes)) p[r] = {&cpu_backend(), "shape computation: its readers need it on the host", true};
  }
  return p;
}

namespace {

struct Planner {
  const Backend& requested;
  const ir::ElementTypes& types;
  PlacementReport& report;
  int64_t on_requested = 0, on_cpu = 0;
  std::set<const ir::Value*> uploaded;

  // Where each value of g lives after its producer ran (graph inputs: host).
  void graph(const ir::Graph& g, bool sub) {
    std::unordered_map<const ir::Value*, ir::Device> home;
    std::set<std::pair<const ir::Value*, bool>> moved;  // (value, to host?)
    const std::vector<NodePlacement> placed = place_graph(g, requested, types);
    const auto& nodes = g.nodes();
    for (size_t ni = 0; ni < nodes.size(); ++ni) {
      const ir::Node* n = nodes[ni];
      const NodePlacement& p = placed[ni];
      ++report.nodes;
      if (sub) ++report.subgraph_nodes;
      (p.backend == &requested ? on_requested : on_cpu) += 1;
      if (p.backend != &requested) report.fallbacks.push_back({n->name, n->op_type, p.reason, sub});
      if (p.shape_computation) ++report.shape_computations_on_cpu;
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const ir::Value* v = n->inputs[i];
        if (!v || shape_only_input(*p.backend, *n, i)) continue;
        const bool want_host = wants_host_input(*p.backend, *n, i);
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
  const ir::ElementTypes types(m);
  Planner p{requested, types, r};
  p.graph(*m.graph, false);
  r.uploaded_initializers = static_cast<int64_t>(p.uploaded.size());
  r.nodes_per_backend.push_back({std::string(requested.name()), p.on_requested});
  if (&requested != &cpu_backend()) r.nodes_per_backend.push_back({"cpu", p.on_cpu});
  return r;
}

}  // namespace mcc::backends
