// Deterministic text dump of the IR (tests, golden files, `mcc inspect --dump`).
#pragma once
#include <string>

#include "ir/graph.h"

namespace mcc::ir {
/// Attributes in stored order, floats with %.9g, initializers as dtype, shape and an FNV-1a
/// checksum of their bytes instead of the data.
std::string print_model(const Model& m);
std::string print_graph(const Graph& g, int indent = 0);
}  // namespace mcc::ir
