// Which nodes may be computed once, before any run, when every input is a constant: the rule the
// `fold` stage (which rewrites the model) and the executor (which computes them at plan time and
// skips them at run time, as ONNX Runtime's session does) share, and how many bytes a node's
// outputs will take when that can be told without running it.
// Never ahead of time: ops holding subgraphs (If/Loop/Scan), ops that draw random values,
// DequantizeLinear (a QDQ model's int8 weights stay int8: the runtimes and the int8 kernels read
// them as codes), and ops outside the default domain.
#pragma once
#include <cstddef>
#include <functional>

#include "ir/graph.h"

namespace mcc::backends {

/// Whether n may be computed ahead of the runs when its inputs are constants (the op alone; the
/// caller checks the inputs, the outputs' kinds and the sizes).
bool computable_ahead(const ir::Node& n);

/// Bytes n's outputs will take, when that can be told before running it (0: unknown).
/// constant_input(i) is input i's value when known (nullptr otherwise).
size_t predicted_output_bytes(const ir::Node& n, const std::function<const ir::Tensor*(size_t)>& constant_input);

}  // namespace mcc::backends
