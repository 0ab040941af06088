// Pipeline specs: parsing (inline text, JSON or YAML files), validation against the stage
// registry, and the canonical form stored in the sidecar state (SPEC §3).
//
// Inline grammar (MLIR's pass-pipeline syntax, flattened, plus stage labels):
//   pipeline ::= '' | stage (',' stage)*
//   stage    ::= (label ':')? name ('{' option (' ' option)* '}')?
//   option   ::= key '=' value          value: up to the next space or '}'; commas inside braces
//                                       belong to list values; "double quoted" for spaces/braces
//   label    ::= [a-z][a-z0-9_-]*       default: the stage name, then name.2, name.3 on repeats
// Example: fold,fp16{keep_io=true fp32_ops=Softmax,LayerNormalization},p:prune{sparsity=0.3}
//
// File form (`-p @spec.json`, `-p @spec.yaml`/`.yml`): a list of stages, or {"pipeline": list}
// (or {"pipeline": "inline spec"}); each stage is {"stage": name, "label"?: str, "options"?: map}
// or a bare stage name. Option values are scalars, or lists of scalars for list options. Any
// other file extension holds an inline spec.
//
// Every error is a UsageError (exit 2) raised before any work, on one line, naming where (column
// of the inline text, or file, key path and line:column for YAML) and the nearest valid name.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ir/errors.h"
#include "transforms/pipeline/pass.h"
#include "transforms/pipeline/pass_registry.h"

namespace mcc::transforms {

/// One validated stage: its label, the stage's PassInfo and every option resolved to its
/// canonical text in declaration order.
struct Stage {
  std::string label;
  std::string default_label;  // what the label would be without an explicit one
  PassInfo info;              // copy of the registered stage's description
  Options options;
  const std::string& pass() const { return info.name; }
  /// Options as typed JSON (bool, integer, number, string, list of strings), declaration order.
  nlohmann::ordered_json options_json() const;
};

class Pipeline {
 public:
  Pipeline() = default;
  /// Parses inline text.
  static Pipeline parse(std::string_view spec, const PassRegistry& registry = builtin_passes());
  /// Parses a state's recorded pipeline: an option the text lacks (the state predates it) takes
  /// its OptionSpec::recorded_default, so the replay means what the recording run did.
  static Pipeline parse_recorded(std::string_view spec, const PassRegistry& registry = builtin_passes());
  /// A `-p` argument: "@path" reads the file (format by extension), anything else is inline.
  static Pipeline from_argument(std::string_view arg,
                                const PassRegistry& registry = builtin_passes());
  /// The file form as already-parsed JSON; `source` names it in errors.
  static Pipeline from_json(const nlohmann::ordered_json& j, const std::string& source,
                            const PassRegistry& registry = builtin_passes());
  /// The file form as YAML text; `source` names it in errors.
  static Pipeline from_yaml(const std::string& text, const std::string& source,
                            const PassRegistry& registry = builtin_passes());

  /// Canonical inline form: every option with its value in declaration order, labels only when
  /// not the default. parse(to_string()) gives the same pipeline.
  std::string to_string() const;
  /// The file form: [{"label", "stage", "options"}], options typed.
  nlohmann::ordered_json to_json() const;

  const std::vector<Stage>& stages() const { return stages_; }
  bool empty() const { return stages_.empty(); }

 private:
  std::vector<Stage> stages_;
  friend struct PipelineBuilder;
};

/// `s` with control characters escaped ("\n" → "\\n"), so an error message stays one line.
std::string one_line(std::string_view s);

/// Runs `f`; a UsageError it throws is rethrown with its text made one line.
template <class F>
auto with_one_line_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const UsageError& e) {
    throw UsageError(one_line(e.what()));
  }
}

/// "bool", "int", "float", "string", "list".
const char* option_type_name(OptionType t);

/// Canonical text of `value` for option `spec` of stage `stage`: true/false, decimal integers,
/// shortest round-trip floats, list items joined by ','. Throws UsageError (without position)
/// for a value the type or choices do not allow.
std::string canonical_option_value(const std::string& stage, const OptionSpec& spec,
                                   std::string_view value);

}  // namespace mcc::transforms
