// A large JSON document moved out of memory into an anonymous scratch file (ir/spill_file.h)
// while later work runs, and read back unchanged when it is needed. Stage records that carry every
// code of a model (GPTQ's 4-bit codes: half a byte per weight, a third more in base64) would
// otherwise stay resident through the stages after theirs, the self-check's two models included.
// Where no scratch file can be made, park() returns nullptr and the caller keeps the document.
#pragma once
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>

#include "ir/spill_file.h"

namespace mcc::transforms {

class ParkedJson {
 public:
  /// Moves `doc` (CBOR, which keeps key order, strings and numbers exactly) into a temporary
  /// file and clears it; nullptr (doc untouched) when the file cannot be made or written.
  static std::shared_ptr<const ParkedJson> park(nlohmann::ordered_json& doc);

  /// The document as it was parked. Throws InternalError when the file cannot be read back.
  nlohmann::ordered_json load() const;
  size_t bytes() const { return static_cast<size_t>(file_->size()); }

 private:
  explicit ParkedJson(std::unique_ptr<ir::SpillFile> file) : file_(std::move(file)) {}
  std::unique_ptr<ir::SpillFile> file_;
};

/// Approximate heap bytes a document holds: 16 per value, plus a block per string, array, object
/// and key (a stage record of 300,000 per-channel scales and ranges takes about 80 MiB).
size_t json_heap_bytes(const nlohmann::ordered_json& doc);

}  // namespace mcc::transforms
