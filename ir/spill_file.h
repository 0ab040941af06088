// An anonymous scratch file for bytes that need not stay in memory while other work runs: large
// stage records (transforms/pipeline/parked_json.h), the reference model's outputs during a
// self-check (judge/agreement.h). It is created in std::filesystem::temp_directory_path() (TMPDIR,
// else /tmp) and unlinked at once, so nothing is left behind however the process ends.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace mcc::ir {

class SpillFile {
 public:
  /// A new empty file, or nullptr when none can be made (callers then keep their bytes in memory).
  static std::unique_ptr<SpillFile> create();
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  /// Appends n bytes and returns their offset; false (nothing usable written) on a write error.
  bool append(const void* p, size_t n, uint64_t& offset);
  /// Reads n bytes at offset into p; throws InternalError when they cannot be read back.
  void read(uint64_t offset, void* p, size_t n) const;
  uint64_t size() const { return size_; }

 private:
  explicit SpillFile(int fd) : fd_(fd) {}
  int fd_;
  uint64_t size_ = 0;
};

}  // namespace mcc::ir
