// Channel axes of the weights of Conv, ConvTranspose, Gemm and MatMul (see weight_layout.h).
#include "ir/weight_layout.h"

#include "ir/op_attrs.h"

namespace mcc::ir {

std::optional<WeightLayout> weight_layout(const Node& op, const std::vector<int64_t>& w,
                                          ConvWeightRank conv_rank) {
  WeightLayout l;
  const bool conv = op.is("Conv"), transpose = op.is("ConvTranspose");
  if (conv || transpose) {
    if (w.size() < (conv_rank == ConvWeightRank::Spatial ? 3u : 2u)) return std::nullopt;
    l.group = ConvAttrs(op).group();
    l.group_divides = l.group >= 1 && w[0] % l.group == 0;
    l.out_axis = transpose ? 1 : 0;
    l.in_axis = transpose ? 0 : 1;
    l.out_channels = transpose ? w[1] * l.group : w[0];
    return l;
  }
  if (op.is("Gemm") && w.size() == 2) {
    const bool tb = GemmAttrs(op).trans_b();
    l.out_axis = tb ? 0 : 1;
    l.in_axis = tb ? 1 : 0;
  } else if (op.is("MatMul") && w.size() == 2) {
    l.out_axis = 1;
    l.in_axis = 0;
  } else {
    return std::nullopt;
  }
  l.out_channels = w[static_cast<size_t>(l.out_axis)];
  return l;
}

}  // namespace mcc::ir
