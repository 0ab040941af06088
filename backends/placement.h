// Where each node runs: on the requested backend when it supports the node with the input element
// types known before running (ir::ElementTypes), otherwise on the cpu. Then shape computations go
// back to the cpu: a node whose outputs are all integer (or which reads no computed value, like
// Constant) and whose every reader runs on the cpu or reads it as a host input (Reshape's shape,
// Clip's bounds) runs on the cpu too, so small shape tensors are not shipped to a device and back
// (ORT's CUDA provider does the same). MCC_SHAPES_ON_CPU=0 turns that second step off.
// Also counts the host<->device transfers placement implies. The executor plans with it;
// `mcc inspect --backend NAME` reports it without running anything (no device needed).
//
// Does not apply to: values whose type is not known statically (the requested backend decides
// whether it needs to know; the cuda backend then declines and the node runs on the cpu).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "ir/element_types.h"

namespace mcc::backends {

/// The backend a node runs on, and why it is not the requested one (empty when it is).
struct NodePlacement {
  const Backend* backend = nullptr;
  std::string reason;
  bool shape_computation = false;  // supported by the requested backend, kept on the cpu by design
};

/// Input element types of n as known before running.
std::vector<ir::DType> static_input_dtypes(const ir::Node& n, const ir::ElementTypes& types);

/// Places one node on its own (no look at its readers).
NodePlacement place_node(const ir::Node& n, const Backend& requested, const ir::ElementTypes& types);

/// Places the nodes of one graph (not its subgraphs), in g.nodes() order.
std::vector<NodePlacement> place_graph(const ir::Graph& g, const Backend& requested, const ir::ElementTypes& types);

/// True when node input i must be on the host for backend b (a host backend, or a host input).
bool wants_host_input(const Backend& b, const ir::Node& n, size_t i);
/// True when b reads only the type and dims of node input i.
bool shape_only_input(const Backend& b, const ir::Node& n, size_t i);

/// Placement of a whole model, main graph and subgraph bodies.
struct PlacementReport {
  std::string requested;
  struct Count { std::string backend; int64_t nodes = 0; };
  std::vector<Count> nodes_per_backend;  // requested backend first, then cpu (when different)
  struct Fallback { std::string node, op, reason; bool in_subgraph = false; };
  std::vector<Fallback> fallbacks;       // in graph order, main graph first
  int64_t nodes = 0;                     // all nodes, subgraph bodies included
  int64_t subgraph_nodes = 0;
  /// Nodes the requested backend supports that run on the cpu as shape computations (included
  /// in the cpu count and in fallbacks).
  int64_t shape_computations_on_cpu = 0;
  /// Per run of the main graph: tensors moved between devices (not counting initializers, which
  /// are uploaded once) and initializers uploaded once.
  int64_t transfers = 0;
  int64_t uploaded_initializers = 0;
};
PlacementReport plan_placement(const ir::Model& m, const Backend& requested);

}  // namespace mcc::backends
