// Naming conventions for graph outputs that the stages and the judge share. An output whose name
// holds "logits" (any case) is taken for causal-LM logits: `mcc eval` scores it as such without
// --metric, and weight-only quantization gives the layer writing it finer blocks.
#pragma once
#include <algorithm>
#include <cctype>
#include <string>

namespace mcc::ir {

/// Whether `name` names causal-LM logits by convention (holds "logits", any case).
inline bool names_lm_logits(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name.find("logits") != std::string::npos;
}

}  // namespace mcc::ir
