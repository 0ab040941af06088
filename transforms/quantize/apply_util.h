// Building blocks of writing a quantize plan (quantize/apply.cpp, quantize/apply_dynamic.cpp,
// quantize/apply_gather.cpp):
// scale and zero-point tensors of a point, a weight's quantized codes, node naming. Nothing here
// changes a graph except through the names it reserves.
#pragma once
#include <set>
#include <string>

#include "ir/graph.h"
#include "transforms/quantize/plan.h"

namespace mcc::transforms::quantize {

/// The point's scale: a float32 scalar (axis -1) or a vector of one scale per channel.
ir::Tensor scale_tensor(const QPoint& p);
/// The point's zero point in its dtype, shaped like scale_tensor.
ir::Tensor zero_point_tensor(const QPoint& p);
/// A node name from `hint` unused in g and in `taken` (suffix _1, _2 on a clash); reserves it.
std::string unique_node_name(const ir::Graph& g, std::set<std::string>& taken, const std::string& hint);
/// The node a point's consumer label names: its name, or its first output's name when unnamed;
/// nullptr when g has none.
ir::Node* find_consumer(const ir::Graph& g, const std::string& label);
/// First node of g (in order) that reads v directly.
const ir::Node* first_consumer(const ir::Graph& g, const ir::Value& v);
/// ModelError unless the point's scales fit tensor `t` (one per channel along its axis).
void check_channels(const QPoint& p, const ir::Tensor& t);
/// The quantized codes (i8 weights, i32 biases) of float tensor `w` for point `p`. Consumes `w`
/// chunk by chunk, releasing its memory as it goes (ir/tensor_streaming.h), so a huge weight is
/// not held twice.
ir::Tensor quantized_codes(ir::Tensor&& w, const QPoint& p);

}  // namespace mcc::transforms::quantize
