// Default feeds for the cache inputs of a decoder exported with a KV cache (Optimum / ONNX Runtime
// GenAI layout: past_key_values.L.key / .value, attention_mask, position_ids), so that samples
// holding only input_ids run as a prefill with an empty cache: calibration, eval and bench take
// the same sample folders as the cache-less export.
// Applies only to a graph with at least one past-cache input (a rank-4 input whose name contains
// "past" and whose axis 2 is symbolic); inputs a sample does give are never touched.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/sample_data.h"

namespace mcc::ir {

/// True for a past key/value cache input: rank 4, name containing "past", axis 2 not a fixed size.
bool is_past_cache_input(const Value& v);

/// Fills the data inputs the sample left out, when the graph has a past-cache input:
///   past cache      zeros of shape [batch, heads, 0, head_dim] (heads and head_dim must be fixed)
///   attention_mask  ones [batch, seq]            position_ids  0 .. seq-1 per row
/// batch and seq come from the sample's input_ids [batch, seq]. Returns the names it filled (in
/// graph input order). Throws ModelError naming the input when a missing input cannot be filled
/// (no input_ids in the sample, a cache input with an unknown head count).
std::vector<std::string> fill_decoder_cache_inputs(const Graph& g, BoundSample& s);

}  // namespace mcc::ir
