// Host-side helpers shared by the cuda backend's elementwise, normalization and reduction ops:
// ir::DType -> cuda::ElemType, dtype checks for NodeChecks, and numpy broadcasting of up to three
// inputs into Shape8 strides with adjacent dims collapsed (so most broadcasts are rank 1-3).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/kernels/elem_type.h"
#include "backends/cuda/runtime/shape8.h"
#include "ir/graph.h"

namespace mcc::backends::cuda {

/// The kernel element type of dt, or nullopt for types these kernels do not take.
std::optional<mcc::cuda::ElemType> elem_type(ir::DType dt);

/// "" when input i of n is omitted or has one of `allowed`, else the reason ("input 0 is f64";
/// an unknown dtype declines).
std::string check_input_type(const ir::Node& n, std::span<const ir::DType> dts, size_t i,
                             std::initializer_list<ir::DType> allowed);
/// "" when every present input in [first, end) has the dtype of input `first` (an unknown dtype
/// declines).
std::string check_same_types(const ir::Node& n, std::span<const ir::DType> dts, size_t first,
                             size_t end = SIZE_MAX);
/// True when output i of n is present and named (its value is wanted).
bool node_wants_output(const ir::Node& n, size_t i);

/// numpy broadcasting of inputs to one output: the output dims and, per input, a Shape8 over
/// the collapsed output dims with its strides (0 on broadcast dims).
struct Broadcast {
  std::vector<int64_t> out;
  std::vector<mcc::cuda::Shape8> in;
  int64_t numel = 0;
};
/// ModelError naming n when the shapes do not broadcast.
Broadcast broadcast(const ir::Node& n, const std::vector<std::vector<int64_t>>& in_dims);
/// Strides of `in` read as broadcast to `out` (right-aligned), collapsed as `broadcast` does.
mcc::cuda::Shape8 broadcast_to(const ir::Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& out);

}  // namespace mcc::backends::cuda

namespace mcc::backends::cuda {
class OpTable;
/// Dropout, Where, Clip, Cast, CastLike (ops/where_clip_cast.cpp); part of register_elementwise.
void register_where_clip_cast(OpTable& t);
}  // namespace mcc::backends::cuda
