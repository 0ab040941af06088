// skip_fusion_orphans (see fusion_orphans.h): counts the readers each value has among the
// kernels that run, then walks the nodes backwards and skips those whose outputs lost them all.
#include "backends/fusion_orphans.h"

#include <unordered_map>
#include <unordered_set>

#include "ir/op_facts.h"

namespace mcc::backends {

void skip_fusion_orphans(const ir::Graph& g, const std::vector<char>& fused,
                         const std::vector<std::vector<const ir::Value*>>& fused_in,
                         const std::vector<char>& constant, std::vector<char>& skip) {
  const auto& nodes = g.nodes();
  std::unordered_map<const ir::Value*, int64_t> readers;
  auto reads = [&](size_t i, int64_t delta) {
    if (fused[i] && !fused_in[i].empty()) {
      for (const ir::Value* v : fused_in[i])
        if (v) readers[v] += delta;
      return;
    }
    for (const ir::Value* v : nodes[i]->inputs)
      if (v) readers[v] += delta;
    std::unordered_set<const ir::Value*> caps;  // each captured value counts once per node
    for (const ir::Graph* s : nodes[i]->subgraphs()) ir::captured_values(*s, g, caps);
    for (const ir::Value* v : caps) readers[v] += delta;
  };
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!skip[i] && !constant[i]) reads(i, 1);
  for (const ir::Value* v : g.outputs)
    if (v) readers[v] += 1;
  for (size_t i = nodes.size(); i-- > 0;) {
    const ir::Node* n = nodes[i];
    if (skip[i] || constant[i] || fused[i] || !n->subgraphs().empty() || ir::draws_random_values(n->op_type)) continue;
    bool had_readers = false, has_readers = false;
    for (const ir::Value* o : n->outputs) {
      if (!o) continue;
      had_readers = had_readers || !o->uses.empty();
      auto it = readers.find(o);
      has_readers = has_readers || (it != readers.end() && it->second > 0);
    }
    if (!had_readers || has_readers) continue;
    skip[i] = 1;
    reads(i, -1);
  }
}

}  // namespace mcc::backends
