// Structural and type invariants of the IR.
#pragma once
#include "ir/graph.h"

namespace mcc::ir {
/// Throws ModelError naming the first broken invariant: use lists consistent with inputs,
/// producers consistent with outputs, unique names per scope, topological node order,
/// every input defined (graph input, initializer, earlier node output or outer scope),
/// graph outputs defined, initializer tensors consistent with their value's dtype/shape.
void verify(const Model& m);
void verify_graph(const Graph& g);
}  // namespace mcc::ir
