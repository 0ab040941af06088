// Where the output and input channels sit in the weight of Conv, ConvTranspose, Gemm and MatMul,
// and how many output channels the op has: the one place passes and the CLI ask.
//   Conv           W[M, C/g, k..]  weight input 1, out axis 0, in axis 1, M = dims[0]
//   ConvTranspose  W[C, M/g, k..]  weight input 1, out axis 1 (within a group), in axis 0,
//                                  M = dims[1] * group
//   Gemm           B[K, N]         out axis 1, in axis 0; B[N, K] with transB: out 0, in 1
//   MatMul         B[K, N]         out axis 1, in axis 0 (rank 2 only)
// Does not apply to: other ops (ConvInteger, QLinearConv, DeformConv, batched MatMul weights of
// rank != 2, Gemm weights of rank != 2); nothing about the op's input (Gemm transA) is checked.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace mcc::ir {

/// What a Conv/ConvTranspose weight needs to have a layout.
enum class ConvWeightRank {
  Spatial,      // rank >= 3: both channel axes and at least one kernel dim (what the kernels run)
  ChannelAxes,  // rank >= 2: both channel axes (to describe malformed weights too)
};

struct WeightLayout {
  int weight_input = 1;      // the node input holding the weight
  int out_axis = 0;          // weight axis indexed by output channel (ConvTranspose: within a group)
  int in_axis = 1;           // weight axis indexed by input channel (Conv: within a group)
  int64_t group = 1;         // the group attribute of Conv/ConvTranspose; 1 for Gemm and MatMul
  int64_t out_channels = 0;  // the op's output channels: dims[out_axis], x group for ConvTranspose
  /// group >= 1 and it divides dims[0] (Conv: M, ConvTranspose: C). Not required for a layout:
  /// callers that index within groups check it.
  bool group_divides = true;
};

/// The layout of `op`'s weight with dims `w`; nullopt for other ops or ranks (Gemm and MatMul:
/// exactly 2; Conv and ConvTranspose: per `conv_rank`). Reads group (Conv, ConvTranspose) or
/// transB (Gemm) only once the rank fits.
std::optional<WeightLayout> weight_layout(const Node& op, const std::vector<int64_t>& w,
                                          ConvWeightRank conv_rank = ConvWeightRank::Spatial);

}  // namespace mcc::ir
