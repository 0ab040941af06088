// Plan-time common-subexpression detection: a node that repeats an earlier node of the same
// graph (same op, domain, opset, attributes and the very same input values) computes the same
// values, so the executor hands out the earlier node's outputs instead of running it again
// (exporters repeat Slice, Shape and Gather chains; YOLOX's Focus block slices its input twice).
// Not applicable to nodes with subgraphs, tensor, graph or opaque attributes, random ops
// (Random*, Multinomial, Bernoulli, Dropout), or nodes without inputs.
#pragma once
#include <string>

#include "ir/graph.h"

namespace mcc::backends {

/// A key equal for two nodes exactly when the second may reuse the first's outputs; empty when
/// `n` must always run.
std::string duplicate_key(const ir::Node& n);

}  // namespace mcc::backends
