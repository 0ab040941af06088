// Nodes that fusion leaves without readers: a fused kernel may read a tensor other than the one
// a node of its group read (the u8 tensor behind a DequantizeLinear, FusedKernel::inputs), and
// the node that made the skipped-over tensor then computes a value nobody takes. Such nodes are
// not run. Only nodes whose outputs had readers in the graph and lost them all to fusion; not
// nodes with subgraphs, nodes that draw random values, or nodes producing a graph output.
#pragma once
#include <vector>

#include "ir/graph.h"

namespace mcc::backends {

/// Sets skip[i] for every such node of g, last to first (a node whose only readers were skipped
/// this way is skipped too). fused[i]: node i runs a fused kernel reading fused_in[i] (empty: the
/// node's inputs); constant[i]: node i is a Constant computed at plan time.
void skip_fusion_orphans(const ir::Graph& g, const std::vector<char>& fused,
                         const std::vector<std::vector<const ir::Value*>>& fused_in,
                         const std::vector<char>& constant, std::vector<char>& skip);

}  // namespace mcc::backends
