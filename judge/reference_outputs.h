// The reference model's outputs, sample by sample, kept from the run of the reference to the run
// of the model judged against it. The self-check runs the reference over every sample first and
// drops it before the judged model runs, so the two models' weights never need to be held with a
// full set of outputs on top; outputs past a memory budget of 16 MiB (an LLM's logits are 48 MiB a
// sample) wait in an anonymous scratch file (ir/spill_file.h). Tensors of string type and non-tensor
// values (sequences, empty optionals) stay in memory; so does everything when no scratch file can
// be made.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "ir/spill_file.h"

namespace mcc::judge {

class ReferenceOutputs {
 public:
  /// Tensors of at least kSpillMinBytes go to the scratch file once `memory_budget` bytes are held.
  explicit ReferenceOutputs(size_t memory_budget = size_t{16} << 20);
  static constexpr size_t kSpillMinBytes = size_t{1} << 20;

  /// The outputs of the next sample (samples are numbered in the order they are added).
  void add(std::vector<backends::RValue> outputs);
  /// Sample i's outputs, read back from the scratch file where they were spilled; the kept ones
  /// are handed over (a second take of the same sample throws InternalError).
  std::vector<backends::RValue> take(size_t i);
  size_t samples() const { return samples_.size(); }
  /// Bytes written to the scratch file so far.
  uint64_t spilled_bytes() const { return file_ ? file_->size() : 0; }

 private:
  struct Slot {
    backends::RValue value;  // when kept
    bool spilled = false;
    uint64_t offset = 0;
    ir::DType dtype = ir::DType::F32;
    std::vector<int64_t> dims;
  };
  std::vector<std::vector<Slot>> samples_;
  std::vector<bool> taken_;
  std::unique_ptr<ir::SpillFile> file_;
  bool no_file_ = false;  // creating one failed: keep everything
  size_t kept_bytes_ = 0, budget_;
};

}  // namespace mcc::judge
