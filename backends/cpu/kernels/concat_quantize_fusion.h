// Concat -> QuantizeLinear on the cpu backend: the f32 inputs of a Concat whose only reader is a
// per-tensor QuantizeLinear (u8 or s8, constant scale and zero point) are quantized straight into
// their slabs of the quantized output, without the f32 concatenation in between. The bytes are
// those of the two nodes run one by one (the same row quantizer, element by element).
// Does not apply: per-axis or blocked quantization, non-constant scale or zero point, another
// output type, inputs not known to be f32 (known_f32: declared, or made f32 by their producers),
// a Concat output read elsewhere or returned by the graph.
#pragma once
#include <optional>

#include "backends/backend.h"

namespace mcc::backends::cpu {

/// The fusion starting at `n` (a Concat), or nullopt when it does not apply.
std::optional<FusedKernel> fuse_concat_quantize(const ir::Node& n);

}  // namespace mcc::backends::cpu
