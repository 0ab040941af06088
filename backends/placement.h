// Where each node runs: on the requested backend when it supports the node with the input element
// types known at plan time (ir::ShapeInference, else the declared type), otherwise on the cpu.
// Also counts the host<->device transfers that placement implies. The executor plans with it;
// `mcc inspect --backend NAME` reports it without running anything (no device needed).
//
// Does not apply to: values whose type is not known statically (the requested backend decides
// whether it needs to know; the cuda backend then declines and the node runs on the cpu).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "ir/shape_inference/shape_inference.h"

namespace mcc::backends {

/// The backend a node runs on, and why it is not the requested one (empty when it is).
struct NodePlacement {
  const Backend* backend = nullptr;
  std::string reason;
};

/// Input element types of n as known before running: the inferred type, else the declared one.
std::vector<ir::DType> static_input_dtypes(const ir::Node& n, const ir::ShapeInference& types);

/// Places one node.
NodePlacement place_node(const ir::Node& n, const Backend& requested, const ir::ShapeInference& types);

/// Placement of a whole model, main graph and subgraph bodies.
struct PlacementReport {
  std::string requested;
  struct Count { std::string backend; int64_t nodes = 0; };
  std::vector<Count> nodes_per_backend;  // requested backend first, then cpu (when different)
  struct Fallback { std::string node, op, reason; bool in_subgraph = false; };
  std::vector<Fallback> fallbacks;       // in graph order, main graph first
  int64_t nodes = 0;                     // all nodes, subgraph bodies included
  int64_t subgraph_nodes = 0;
  /// Per run of the main graph: tensors moved between devices (not counting initializers, which
  /// are uploaded once) and initializers uploaded once.
  int64_t transfers = 0;
  int64_t uploaded_initializers = 0;
};
PlacementReport plan_placement(const ir::Model& m, const Backend& requested);

}  // namespace mcc::backends
