// Internal to the pipeline parser: stages as written, before validation against the registry.
// The inline, JSON and YAML readers produce these; PipelineBuilder validates and resolves them.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "transforms/pipeline/pipeline.h"

namespace mcc::transforms {

struct RawOption {
  std::string key, value;  // value: text as written (list items joined by ',')
  std::string where;       // error prefix, e.g. "pipeline 'fold{x=1}', column 6"
};

struct RawStage {
  bool has_label = false;
  std::string label, name;
  std::vector<RawOption> options;
  std::string where, label_where;  // error prefixes for the name and the label
};

struct PipelineBuilder {
  /// Expands bundles, validates names, labels and option values, resolves defaults.
  /// `recorded`: the text comes from a state; absent options take OptionSpec::recorded_default.
  static Pipeline build(const std::vector<RawStage>& raw, const PassRegistry& registry, bool recorded = false);
};

/// Splits inline text into raw stages; `what` prefixes positions ("pipeline 'x'" → "pipeline
/// 'x', column 3"). Throws UsageError for syntax errors (braces, empty stages, missing '=').
std::vector<RawStage> tokenize_inline(std::string_view spec, const std::string& what);

}  // namespace mcc::transforms
