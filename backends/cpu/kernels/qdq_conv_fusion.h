// Integer execution of QDQ conv groups on the cpu backend: DequantizeLinear(x u8) ->
// Conv(DequantizeLinear(w s8 constant), [DequantizeLinear(b s32 constant) or f32 constant b]) ->
// [activation] -> [QuantizeLinear(u8 | s8)] runs as one kernel with s32 accumulation (u8 x s8 GEMM
// on an im2col panel, VNNI where available; depthwise convs directly), then in f32
// y = acc * x_scale * w_scale[c] + b[c], the activation, and the output quantization. The result
// matches the unfused nodes within one unit of the output's last place (f32 rounding order).
// Applies when: 2-D conv, constant int8 weights with zero zero points (per-tensor or per-channel
// along axis 0), x per-tensor (per-channel only when each group has one input channel), constant
// scales and zero points. Otherwise the nodes run one by one.
//
// A residual Add after the activation whose other input is a per-tensor DequantizeLinear of a u8/s8
// tensor joins the group too (with the QuantizeLinear after it, per tensor): the kernel reads
// that tensor (FusedKernel::inputs[1]) and adds it as the nodes would (qdq_residual_add.h).
//
// The fusion starts at the x DequantizeLinear when the Conv alone reads its output (the kernel
// then reads the u8 tensor directly); when other nodes read the dequantized x too, it starts at
// the Conv and still reads the u8 tensor the DequantizeLinear reads (FusedKernel::inputs).
// The weight and bias DequantizeLinear nodes still run (their constant result is cached).
#pragma once
#include <optional>

#include "backends/backend.h"

namespace mcc::backends::cpu {

/// The fusion starting at `n` (a DequantizeLinear or Conv), or nullopt when it does not apply.
std::optional<FusedKernel> fuse_qdq_conv(const ir::Node& n);

}  // namespace mcc::backends::cpu
