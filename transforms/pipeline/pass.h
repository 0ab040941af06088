// The stage interface: a Pass is a named, self-describing object (name, one-line help, typed
// options with defaults) that rewrites a Model and reports {modified, stats, record}. The record
// holds the decisions the stage made (per-node fp16 choices, folded nodes, quantization
// parameters, pruning masks); it is written into the sidecar state and handed back to the stage
// on `--state` replay so the stage reproduces the exact same model without recomputing.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"

namespace mcc::transforms {

enum class OptionType { Bool, Int, Float, String, StringList };

struct OptionSpec {
  std::string key;            // snake_case, as written in a pipeline spec
  OptionType type;
  std::string default_value;  // canonical text form
  std::string help;
  std::vector<std::string> choices;  // allowed values for String options (empty = any)
  /// For an option added after states were first written: the value that does what the stage did
  /// before it existed. A recorded pipeline (a state's, Pipeline::parse_recorded) that lacks the
  /// option gets this value instead of default_value. Empty: default_value.
  std::string recorded_default = "";
};

struct PassInfo {
  std::string name;      // as written in a pipeline spec: "fold", "fp16", "quantize", "prune"
  std::string summary;   // one line, shown by `mcc passes`
  std::vector<OptionSpec> options;
  /// Stages this one must not follow in a pipeline, each with the reason: the spec parser
  /// rejects such an order (exit 2) before any work, and says which order works.
  std::vector<std::pair<std::string, std::string>> not_after = {};
};

/// Resolved option values of one stage, in the order the pass declares them; every value was
/// validated by the spec parser, so getters never fail on user input.
class Options {
 public:
  Options() = default;
  Options(const PassInfo& info, std::vector<std::pair<std::string, std::string>> values);
  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  /// Comma-separated list values ("Softmax,LayerNormalization"); empty string = empty list.
  std::vector<std::string> get_list(const std::string& key) const;
  /// (key, canonical text) in declaration order: what the canonical pipeline prints.
  const std::vector<std::pair<std::string, std::string>>& items() const { return values_; }

 private:
  const std::string& raw(const std::string& key) const;
  std::vector<std::pair<std::string, std::string>> values_;
};

struct PassResult {
  bool modified = false;
  nlohmann::ordered_json stats = nlohmann::ordered_json::object();   // counts, e.g. {"folded": 53}
  nlohmann::ordered_json record = nlohmann::ordered_json::object();  // decisions, for the state
};

/// Everything a stage may use; nothing global.
struct PassContext {
  const Options& options;
  std::string label;                                 // the stage label in the pipeline
  const nlohmann::ordered_json* replay = nullptr;    // this stage's record from a state (replay)
  std::string base_dir;                              // folder the relative paths in options resolve against
  int threads = 0;                                   // for stages that execute the model (0 = all cores)
  std::string input_path;                            // the pipeline's input model file ("" in memory)
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const PassInfo& info() const = 0;
  /// Rewrites the model. Throws ModelError/UnsupportedError for models it cannot handle (the
  /// pass manager adds "in stage 'x'" context); "does not apply" is not an error.
  virtual PassResult run(ir::Model& model, PassContext& ctx) = 0;
};

}  // namespace mcc::transforms
