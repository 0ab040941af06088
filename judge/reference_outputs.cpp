// The reference model's outputs, kept or spilled (see judge/reference_outputs.h).
#include "judge/reference_outputs.h"

#include <string>
#include <utility>

#include "ir/errors.h"

namespace mcc::judge {
namespace {

/// The bytes of v that can go to the scratch file: a tensor's, except string tensors (0 otherwise).
size_t spillable_bytes(const backends::RValue& v) {
  const bool tensor = v.kind == backends::RValue::Kind::Tensor && v.tensor.defined() &&
                      v.tensor.dtype() != ir::DType::String;
  return tensor ? v.tensor.nbytes() : 0;
}

}  // namespace

ReferenceOutputs::ReferenceOutputs(size_t memory_budget) : budget_(memory_budget) {}

void ReferenceOutputs::add(std::vector<backends::RValue> outputs) {
  std::vector<Slot> slots(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    Slot& s = slots[k];
    backends::RValue& v = outputs[k];
    const size_t bytes = spillable_bytes(v);
    if (bytes >= kSpillMinBytes && kept_bytes_ + bytes > budget_ && !no_file_) {
      if (!file_) file_ = ir::SpillFile::create();
      no_file_ = !file_;
      if (file_ && file_->append(v.tensor.raw(), bytes, s.offset)) {
        s.spilled = true;
        s.dtype = v.tensor.dtype();
        s.dims = v.tensor.dims();
        continue;
      }
    }
    kept_bytes_ += bytes;
    s.value = std::move(v);
  }
  samples_.push_back(std::move(slots));
  taken_.push_back(false);
}

std::vector<backends::RValue> ReferenceOutputs::take(size_t i) {
  if (i >= samples_.size() || taken_[i])
    throw InternalError("reference outputs of sample " + std::to_string(i) + " are not held");
  taken_[i] = true;
  std::vector<backends::RValue> out;
  for (Slot& s : samples_[i]) {
    if (!s.spilled) {
      kept_bytes_ -= spillable_bytes(s.value);
      out.push_back(std::move(s.value));
      continue;
    }
    ir::Tensor t = ir::Tensor::allocate(s.dtype, s.dims);
    file_->read(s.offset, t.mutable_raw(), t.nbytes());
    out.push_back(backends::RValue::of(std::move(t)));
  }
  samples_[i].clear();
  return out;
}

}  // namespace mcc::judge
