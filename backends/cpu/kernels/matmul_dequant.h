// Kernel-level fusion for the cpu backend: an f32 MatMul whose weight B is a DequantizeLinear of
// constant int8/uint8 codes [K, N] (a static or dynamic QDQ model's weight), with a constant f32
// scale per tensor or per output column (axis 1) and an optional constant zero point of the
// codes' type. The DequantizeLinear is then not run on its own:
//   - runs that keep weight copies (ExecOptions::keep_weight_copies) dequantize W once and keep
//     it packed for the f32 GEMM (as a MatMul by a float constant);
//   - lean runs (large models: calibration, the self-check) dequantize a band of columns at a
//     time into a buffer of at most kBandBytes and multiply A by each band, so no float copy of
//     the whole weight exists at any moment (an LLM's tied LM head alone is [576, 49152]).
// Each W element is (code - zero point) * scale in f32, exactly as DequantizeLinear computes it.
// Does not apply to blocked scales (block_size), an output_dtype other than f32, a weight
// DequantizeLinear read by anything else, or A of another dtype; those run as separate nodes.
#pragma once
#include <optional>

#include "backends/backend.h"

namespace mcc::backends::cpu {

/// The fusion starting at `n` (a MatMul), or nullopt when it does not apply.
std::optional<FusedKernel> fuse_dequantized_matmul(const ir::Node& n);

}  // namespace mcc::backends::cpu
