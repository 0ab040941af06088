// The control family's per-file registrations (called from register_control.cpp) and the
// tensor slicing/stacking helpers that Loop, Scan and the sequence ops share.
#pragma once
#include <cstdint>
#include <vector>

#include "backends/kernel_registry.h"

namespace mcc::backends::cpu {

void register_control_flow(KernelRegistry& r);  // control_flow.cpp: If, Loop, Scan
void register_sequence(KernelRegistry& r);      // sequence.cpp
void register_optional(KernelRegistry& r);      // optional.cpp
void register_rnn(KernelRegistry& r);           // rnn.cpp: LSTM, GRU, RNN
void register_quantize(KernelRegistry& r);      // quantize.cpp

/// A bool scalar tensor (Tensor::scalar<bool> cannot be used: std::vector<bool> has no data()).
inline ir::Tensor bool_scalar(bool v) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::Bool, {});
  t.mutable_data<bool>()[0] = v;
  return t;
}

/// Concatenates tensors (same dtype and rank, equal dims except `axis`) along `axis`. Works for
/// every fixed-size dtype and strings; ModelError naming the node on mismatch.
ir::Tensor concat_tensors(const ir::Node& n, const std::vector<ir::Tensor>& parts, int64_t axis);
/// Stacks equally shaped tensors along a new axis `axis` in [0, rank].
ir::Tensor stack_tensors(const ir::Node& n, const std::vector<ir::Tensor>& parts, int64_t axis);
/// Slice [begin, begin+len) of t along axis; keep_axis=false drops the axis (len must be 1).
ir::Tensor slice_axis(const ir::Node& n, const ir::Tensor& t, int64_t axis, int64_t begin, int64_t len,
                      bool keep_axis);

}  // namespace mcc::backends::cpu
