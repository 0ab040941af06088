// Bias correction and 8-bit sensitivity estimates for the quantize stage.
//
// Bias correction (Nagel et al. 2019, "Data-Free Quantization", empirical variant). Rounding a
// weight row changes the layer's output by (Wq - W) x, whose expectation is not zero: over 113
// Convs with SiLU and no normalisation (YOLOX-nano) these per-channel offsets accumulate. With
// the per-channel input means E[x_i] streamed during calibration, the expected shift of output
// channel o is
//     shift[o] = sum_{i in group(o)} (sum_k (Wq - W)[o,i,k]) * E[x_i]        (Conv [O, I/g, k...])
//     shift[n] = sum_k (Wq - W)[k,n] * E[x_k]    (Gemm transB=0; [n,k] with transB=1)
// and the float bias becomes B - shift before it is quantized. Borders (zero padding) are
// ignored: the mean is taken over every position. Numerical notes: sums in double; Wq is the
// exact float32 value DequantizeLinear produces (q * s).
// Sensitivity: see estimated_snr_db in quantize/tune.h; inputs are treated as uncorrelated.
// Does not apply when: ConvTranspose and MatMul (no bias input), a weight that is not per-tensor
// or per-output-channel along the layout assumed above, or a channel count that differs from the
// calibrated one.
#include "transforms/quantize/tune.h"

#include <cmath>

#include "ir/op_attrs.h"
#include "ir/weight_layout.h"
#include "transforms/quantize/block_quant.h"

namespace mcc::transforms::quantize {

namespace {

struct Layout {
  int64_t out = 0, in_per_group = 0, kernel = 1, groups = 1;
  bool gemm_kn = false;  // Gemm with W [K, N]
};

std::optional<Layout> layout_of(const ir::Node& n, const ir::Tensor& w, const ChannelMoments& x, std::string& why) {
  Layout l;
  if (n.op_type == "Conv") {
    const auto wl = ir::weight_layout(n, w.dims());
    if (!wl) return why = "weight rank < 3", std::nullopt;
    l.out = wl->out_channels;
    l.in_per_group = w.dims()[static_cast<size_t>(wl->in_axis)];
    for (size_t d = 2; d < w.rank(); ++d) l.kernel *= w.dims()[d];
    l.groups = wl->group;
  } else if (n.op_type == "Gemm") {
    if (ir::GemmAttrs(n).trans_a()) return why = "transA=1", std::nullopt;
    const auto wl = ir::weight_layout(n, w.dims());
    if (!wl) return why = "weight rank != 2", std::nullopt;
    l.out = wl->out_channels;
    l.in_per_group = w.dims()[static_cast<size_t>(wl->in_axis)];
    l.gemm_kn = wl->out_axis == 1;
  } else {
    return why = n.op_type + " has no bias input to correct", std::nullopt;
  }
  if (l.groups < 1 || l.out % l.groups != 0 ||
      x.sum.size() != static_cast<size_t>(l.in_per_group * l.groups) || x.count == 0)
    return why = "input channels differ from the calibrated tensor", std::nullopt;
  return l;
}

/// Weight index of (output o, input channel i within the group, kernel position k).
size_t widx(const Layout& l, int64_t o, int64_t i, int64_t k) {
  if (l.gemm_kn) return static_cast<size_t>(i * l.out + o);
  return static_cast<size_t>((o * l.in_per_group + i) * l.kernel + k);
}

/// The dequantized value of weight element `i` (value w, output channel o): from the recorded
/// codes when GPTQ chose them (quantize/static_gptq.h), else rounded to nearest.
float dequantized(const QPoint& wp, float w, int64_t o, size_t i) {
  const float s = wp.scale[wp.axis < 0 ? 0 : static_cast<size_t>(o)];
  if (!wp.codes.empty()) return static_cast<float>(packed_code_at(wp.codes, ir::DType::I8, i)) * s;
  return static_cast<float>(quantize_weight(w, s)) * s;
}

}  // namespace

std::optional<std::vector<double>> bias_shift(const ir::Node& n, const NodeSlots& slots, const QPoint& wp,
                                              const ChannelMoments& x, std::string& why) {
  const ir::Tensor& w = *n.input(static_cast<size_t>(slots.weight))->initializer;
  const auto l = layout_of(n, w, x, why);
  if (!l) return std::nullopt;
  if (wp.axis >= 0 && (wp.axis != slots.weight_axis || wp.scale.size() != static_cast<size_t>(l->out)))
    return why = "weight scales are not per output channel", std::nullopt;
  const auto src = w.data<float>();
  std::vector<double> shift(static_cast<size_t>(l->out), 0.0);
  const int64_t out_per_group = l->out / l->groups;
  for (int64_t o = 0; o < l->out; ++o) {
    const int64_t base = (o / out_per_group) * l->in_per_group;
    double acc = 0;
    for (int64_t i = 0; i < l->in_per_group; ++i) {
      double d = 0;
      for (int64_t k = 0; k < l->kernel; ++k) {
        const size_t at = widx(*l, o, i, k);
        d += static_cast<double>(dequantized(wp, src[at], o, at)) - static_cast<double>(src[at]);
      }
      acc += d * x.mean(static_cast<size_t>(base + i));
    }
    shift[static_cast<size_t>(o)] = acc;
  }
  return shift;
}

std::optional<double> estimated_snr_db(const ir::Node& n, const NodeSlots& slots, const ChannelMoments& x,
                                       float act_scale) {
  if (slots.weight < 0) return std::nullopt;
  const ir::Tensor& w = *n.input(static_cast<size_t>(slots.weight))->initializer;
  std::string why;
  const auto l = layout_of(n, w, x, why);
  if (!l) return std::nullopt;
  const auto src = w.data<float>();
  const double noise = static_cast<double>(act_scale) * static_cast<double>(act_scale) / 12.0;
  const int64_t out_per_group = l->out / l->groups;
  double nsr = 0;
  int64_t used = 0;
  for (int64_t o = 0; o < l->out; ++o) {
    const int64_t base = (o / out_per_group) * l->in_per_group;
    double sig = 0, wsq = 0;
    for (int64_t i = 0; i < l->in_per_group; ++i) {
      double r = 0;
      for (int64_t k = 0; k < l->kernel; ++k) {
        const double v = src[widx(*l, o, i, k)];
        r += v * v;
      }
      wsq += r;
      sig += r * x.second_moment(static_cast<size_t>(base + i));
    }
    if (wsq == 0 || sig == 0) continue;  // dead channel: no signal, no noise that matters
    nsr += noise * wsq / sig;
    ++used;
  }
  if (!used) return std::nullopt;
  nsr /= static_cast<double>(used);
  return nsr > 0 ? -10.0 * std::log10(nsr) : 300.0;
}

}  // namespace mcc::transforms::quantize
