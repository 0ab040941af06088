// eliminate_dead_code: remove nodes whose outputs nothing uses, and initializers nothing uses, in
// the main graph and in every If/Loop/Scan body.
//
// Before:  a = Relu(x)   b = Sigmoid(x)   y = Neg(a)        (outputs: y; b unused)
// After:   a = Relu(x)   y = Neg(a)
// A value is live when a graph lists it as an output (its own graph, or a subgraph that returns
// an outer value directly) or when any node uses it, including nodes inside subgraphs that
// capture it from an outer scope: a value used only inside an If branch stays.
// Walks each graph last node first, so a chain of dead nodes goes in one sweep; a live node's
// subgraphs are swept before the nodes above it are examined, so captures they drop are seen.
// Does not apply to: graph inputs (the interface never changes, even when unused) and
//   initializers that are also graph inputs.
// Numerical notes: none.
#include <string>

#include "transforms/fold/fold.h"

namespace mcc::transforms::fold {
namespace {

bool is_dead(const ir::Node& n) {
  for (const ir::Value* o : n.outputs)
    if (o && (!o->uses.empty() || is_any_graph_output(*o))) return false;
  return true;
}

int64_t sweep(ir::Graph& g, bool subgraphs, RewriteLog& log) {
  int64_t removed = 0;
  const std::vector<ir::Node*> order = g.nodes();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node& n = **it;
    if (is_dead(n)) {
      log.add("dead_nodes_removed", n.name.empty() ? n.op_type : n.name);
      detach_subgraph_captures(n);
      g.erase(n);
      ++removed;
      continue;
    }
    if (subgraphs)
      for (ir::Graph* sg : n.subgraphs()) removed += sweep(*sg, subgraphs, log);
  }
  const std::vector<ir::Value*> inits = g.initializers;
  for (ir::Value* v : inits) {
    const std::string name = v->name;
    if (drop_if_unused(v)) {
      log.add("initializers_removed", name);
      ++removed;
    }
  }
  return removed;
}

}  // namespace

int64_t eliminate_dead_code(ir::Model& m, const FoldConfig& cfg, RewriteLog& log) {
  return sweep(*m.graph, cfg.subgraphs, log);
}

}  // namespace mcc::transforms::fold
