// Where eval/bench/calibration get their input samples: a data folder (either SPEC layout),
// or seeded random inputs shaped by the model's declared inputs plus --dim / --shape overrides;
// and a loaded sample as the executor's feeds.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "ir/graph.h"
#include "ir/sample_data.h"

namespace mcc::io {

struct ShapeOverrides {
  std::map<std::string, int64_t> dims;                  // --dim name=value (symbolic dims)
  std::map<std::string, std::vector<int64_t>> shapes;   // --shape input=1x3x224x224
};

/// Parses "--dim N=1" and "--shape x=1x3x224x224" values; throws UsageError naming the flag.
void parse_dim_flag(const std::string& s, ShapeOverrides& o);
void parse_shape_flag(const std::string& s, ShapeOverrides& o);

/// The concrete shape for a graph input: --shape, else declared dims with --dim for symbols.
/// Throws UsageError naming the input and the unresolved dim (and the flag that sets it).
std::vector<int64_t> resolve_input_shape(const ir::Value& input, const ShapeOverrides& o);

/// Seeded random inputs for every data input (not initializers): floats uniform in [-1, 1),
/// integers in [0, 10), bools 0/1; deterministic for a seed on every platform.
ir::BoundSample random_sample(const ir::Graph& g, const ShapeOverrides& o, uint64_t seed, int index);

/// Lists the samples of a data folder (sample folders in natural order), capped at `limit` (0 = all).
std::vector<std::string> sample_dirs(const std::string& dir, size_t limit);

using SampleFeeds = std::vector<std::pair<std::string, backends::RValue>>;

/// A sample value (tensor, sequence or optional) as a runtime value.
backends::RValue to_rvalue(const ir::TestValue& v);
/// A sample's inputs as executor feeds (tensors, sequences and optionals).
SampleFeeds to_feeds(ir::BoundSample& s);

}  // namespace mcc::io
