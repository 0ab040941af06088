// A large JSON document moved out of memory into an unlinked temporary file while later work
// runs, and read back unchanged when it is needed. Stage records that carry every code of a
// model (GPTQ's 4-bit codes: half a byte per weight, a third more in base64) would otherwise stay
// resident through the stages after theirs, the self-check's two models included.
// The file lives in std::filesystem::temp_directory_path() (TMPDIR, else /tmp) and is unlinked on
// creation, so nothing is left behind however the process ends. Where no temporary file can be
// made, park() returns nullptr and the caller keeps the document in memory.
#pragma once
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>

namespace mcc::transforms {

class ParkedJson {
 public:
  /// Moves `doc` (CBOR, which keeps key order, strings and numbers exactly) into a temporary
  /// file and clears it; nullptr (doc untouched) when the file cannot be made or written.
  static std::shared_ptr<const ParkedJson> park(nlohmann::ordered_json& doc);
  ~ParkedJson();
  ParkedJson(const ParkedJson&) = delete;
  ParkedJson& operator=(const ParkedJson&) = delete;

  /// The document as it was parked. Throws InternalError when the file cannot be read back.
  nlohmann::ordered_json load() const;
  size_t bytes() const { return bytes_; }

 private:
  ParkedJson(int fd, size_t bytes) : fd_(fd), bytes_(bytes) {}
  int fd_;
  size_t bytes_;
};

/// Approximate heap bytes of a document's payload: string lengths plus 8 per other value.
size_t json_payload_bytes(const nlohmann::ordered_json& doc);

}  // namespace mcc::transforms
