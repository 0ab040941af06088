// Shape rules of sliding-window ops: Conv (kernel from the weight), MaxPool/AveragePool/LpPool
// (kernel_shape attribute; MaxPool's optional indices output), and the global pools. Inputs of
// rank < 3 and ConvTranspose (output_shape, output_padding) are not modelled.
#include <string>

#include "ir/op_attrs.h"
#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {
namespace {

// Output size of a sliding window along one axis (Conv, pools).
std::optional<int64_t> window_out(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pb, int64_t pe,
                                  const std::string& auto_pad, bool ceil_mode) {
  if (stride <= 0 || dil <= 0 || k <= 0) return std::nullopt;
  const int64_t ek = dil * (k - 1) + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return (in + stride - 1) / stride;
  if (auto_pad == "VALID") return in < ek ? std::nullopt : std::optional<int64_t>((in - ek) / stride + 1);
  const int64_t span = in + pb + pe - ek;
  if (span < 0) return std::nullopt;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pb) --out;  // last window must start inside the input
  return out;
}

void window(const NodeShapes& c) {
  const Node& n = c.node;
  auto x = c.dims(0);
  if (!x) return;
  const int64_t r = static_cast<int64_t>(x->size());
  if (r < 3) return;
  Dims k;
  int64_t c_out = (*x)[1];
  if (n.op_type == "Conv") {
    auto w = c.dims(1);
    if (!w || w->size() != x->size()) return;
    c_out = (*w)[0];
    k.assign(w->begin() + 2, w->end());
  } else {
    k = ConvAttrs(n).kernel_shape();
  }
  const size_t sp = static_cast<size_t>(r - 2);
  if (k.size() != sp) return;
  const ConvAttrs a(n);  // the window attributes of Conv and the pools
  const Dims strides = a.strides(sp), dil = a.dilations(sp), pads = a.pads(sp);
  const std::string ap = a.auto_pad();
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp) return;
  Dims o{(*x)[0], c_out};
  for (size_t i = 0; i < sp; ++i) {
    auto v = window_out((*x)[2 + i], k[i], strides[i], dil[i], pads[i], pads[sp + i], ap,
                        n.attr_int("ceil_mode", 0) != 0);
    if (!v) return;
    o.push_back(*v);
  }
  c.out(0, c.dt0(), o);
  if (n.op_type == "MaxPool" && n.outputs.size() > 1) c.out(1, DType::I64, o);
}

void global_pool(const NodeShapes& c) {
  auto x = c.dims(0);
  if (!x) return;
  Dims o = *x;
  for (size_t i = 2; i < o.size(); ++i) o[i] = 1;
  c.out(0, c.dt0(), o);
}

constexpr NamedRule kRules[] = {
    {"AveragePool", window},          {"Conv", window},
    {"GlobalAveragePool", global_pool}, {"GlobalLpPool", global_pool},
    {"GlobalMaxPool", global_pool},   {"LpPool", window},
    {"MaxPool", window},
};

}  // namespace

std::span<const NamedRule> conv_pool_rules() { return kRules; }

}  // namespace mcc::ir::shape_rules
