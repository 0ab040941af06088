// The pass manager: runs a validated Pipeline's stages in order on one model, checks the IR after
// every stage, adds "in stage 'x' (name) after [a, b]" to any error, and records what each stage
// did. On replay it hands every stage its own record from a saved state (PassContext::replay).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "transforms/pipeline/parked_json.h"
#include "transforms/pipeline/pass_registry.h"
#include "transforms/pipeline/pipeline.h"

namespace mcc::transforms {

/// What one stage did. to_json() holds everything but `seconds`, which is volatile (differs
/// between identical runs) and is written by the sidecar under its "timings" key instead.
struct StageRecord {
  std::string label, pass;
  nlohmann::ordered_json options = nlohmann::ordered_json::object();  // typed, declaration order
  bool modified = false;
  nlohmann::ordered_json stats = nlohmann::ordered_json::object();
  nlohmann::ordered_json record = nlohmann::ordered_json::object();
  /// Set when a large record (kParkRecordBytes or more) waits on disk; `record` is then null.
  std::shared_ptr<const ParkedJson> parked_record;
  int64_t nodes_before = 0, nodes_after = 0;  // all graphs, subgraphs included
  int64_t initializer_bytes_before = 0, initializer_bytes_after = 0;
  double seconds = 0;

  /// {label, pass, options, modified, stats, nodes_*, initializer_bytes_*, record}.
  nlohmann::ordered_json to_json() const;
  /// The record, read back from disk when parked.
  nlohmann::ordered_json record_json() const;
};

/// Records at least this large (json_heap_bytes) are parked once their stage ends.
inline constexpr size_t kParkRecordBytes = size_t{16} << 20;

struct PassManagerOptions {
  bool verify_each = true;  // ir::verify after every stage; off only for benchmarking
  std::string base_dir;     // relative paths in options resolve against this
  int threads = 0;
  std::string input_path;   // the input model's file, for stages that compare with it (check)
};

class PassManager {
 public:
  explicit PassManager(const Pipeline& pipeline, const PassRegistry& registry = builtin_passes(),
                       PassManagerOptions options = {});

  /// Runs every stage. `replay` is the "stages" array of a saved state (or nullptr): it must hold
  /// one record per stage with the same label and stage name, else ModelError (exit 3).
  std::vector<StageRecord> run(ir::Model& model,
                               const nlohmann::ordered_json* replay = nullptr) const;

 private:
  const Pipeline& pipeline_;
  const PassRegistry& registry_;
  PassManagerOptions options_;
};

/// Checks that a state's "stages" array fits `pipeline` (count, labels, stage names, a "record"
/// object each); throws ModelError naming `source` and the first mismatch.
void check_replay_records(const Pipeline& pipeline, const nlohmann::ordered_json& stages,
                          const std::string& source);

}  // namespace mcc::transforms
