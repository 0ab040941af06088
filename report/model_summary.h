// What `mcc inspect` reports about a model, as one ordered JSON object (the --json output) and
// its human-readable rendering. Both are deterministic: ordered keys, sorted histograms.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/graph.h"

namespace mcc::report {

/// Summary of `m` loaded from `path` (`file_size` bytes): opsets, inputs/outputs, op histogram,
/// parameters by dtype, sparsity, quantized tensors, external data, subgraphs, metadata.
nlohmann::ordered_json summarize_model(const ir::Model& m, const std::string& path, uint64_t file_size);

/// The text report for a summary made by summarize_model.
std::string render_summary(const nlohmann::ordered_json& s);

}  // namespace mcc::report
