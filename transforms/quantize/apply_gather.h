// Writing the embedding-table points of quantize{embeddings=true} (QPoint::gathered; chosen by
// quantize/dynamic.h's add_embedding_points in mode=dynamic and weight_only):
//
// Before:  Y = Gather(T, ids, axis=0)              T a float32 constant [rows, width]
// After:   Y_quantized = Gather(T_quantized, ids)  the int8 codes of the rows read
//          Y = DequantizeLinear(Y_quantized, T_scale, T_zero_point, axis=rank(ids))
// With one scale per column (the point's axis 1) the scales run along the last axis of every
// gathered tensor, whose index is the rank of ids (-1, the same axis counted from the back,
// where that rank is unknown); with one scale for the table the DequantizeLinear has no axis.
// Only the rows a run reads are dequantized, where a DequantizeLinear before the Gather would
// dequantize the whole table on every run. T_quantized, T_scale and T_zero_point are shared by
// every Gather of the table; the float table is removed once nothing reads it. Y keeps its name,
// declared type and graph-output slots, and the Gather keeps its node name and attributes.
// Does not apply to other points. A gathered point that is not int8 per column or per tensor, a
// table that is not a float32 constant [rows, width] of the main graph, or a consumer that is not
// an axis-0 Gather reading the table as its data is a ModelError.
#pragma once
#include <set>
#include <string>

#include "ir/graph.h"
#include "transforms/quantize/plan.h"

namespace mcc::transforms::quantize {

/// Writes every gathered point of the plan; returns their tensor names.
std::set<std::string> write_gathered_points(ir::Model& model, const Plan& plan, std::set<std::string>& node_names);

}  // namespace mcc::transforms::quantize
