// What a quantized (QDQ) model chose for one layer, read back from its graph for the HTML report:
//  - activation_quant_range: the QuantizeLinear that quantizes an activation (the one feeding the
//    DequantizeLinear that produces the value, else the first one reading the value) and the range
//    its scale, zero point and type represent: [(qmin - zp) * scale, (qmax - zp) * scale];
//  - weight_ranges: per output channel min/max of a Conv/ConvTranspose/Gemm/MatMul weight in the
//    reference model, with the range of each channel's scale when the evaluated model dequantizes
//    that weight (±127 × scale for symmetric int8, else the representable range).
// Only constant scales and zero points (initializers or Constant nodes) are read; per-axis
// activation scales, 4-bit and float8 types are reported as notes, not drawn.
#pragma once
#include <optional>
#include <string>

#include "report/html_report.h"
#include "judge/per_layer.h"
#include "ir/graph.h"

namespace mcc::report {

/// The range the QuantizeLinear of `model` quantizing `value` represents; nullopt with `note` set
/// ("not quantized", or why no range is drawn) otherwise.
std::optional<HtmlQuantRange> activation_quant_range(const ir::Model& model, const std::string& value, std::string& note);

/// The weight ranges of the layer's compute node; nullopt when the reference computes the value
/// with another op or the weight is not a constant float tensor. At most `max_channels` channels.
std::optional<HtmlWeightRanges> weight_ranges(const ir::Model& model, const ir::Model& reference, const judge::LayerStat& layer,
                                              size_t max_channels = 2048);

}  // namespace mcc::report
