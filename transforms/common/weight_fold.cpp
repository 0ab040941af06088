// Per-output-channel affine folding into weights and biases (see weight_fold.h).
#include "transforms/common/weight_fold.h"

#include "ir/op_attrs.h"
#include "ir/weight_layout.h"
#include "transforms/common/rewrite.h"

namespace mcc::transforms {

bool is_float(ir::DType dt) {
  return dt == ir::DType::F32 || dt == ir::DType::F64 || dt == ir::DType::F16 || dt == ir::DType::BF16;
}

std::vector<double> to_f64(const ir::Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  ir::dispatch<MCC_FLOAT_DTYPES>(t.dtype(), "fold", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto d = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(static_cast<float>(d[i]));
    if constexpr (std::is_same_v<T, double>)
      for (size_t i = 0; i < out.size(); ++i) out[i] = d[i];
  });
  return out;
}

ir::Tensor from_f64(ir::DType dt, std::vector<int64_t> dims, const std::vector<double>& v) {
  ir::Tensor t = ir::Tensor::allocate(dt, std::move(dims));
  ir::dispatch<MCC_FLOAT_DTYPES>(dt, "fold", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto d = t.mutable_data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) d[i] = static_cast<T>(v[i]);
      else d[i] = T(static_cast<float>(v[i]));
    }
  });
  return t;
}

std::optional<int64_t> output_channels(const ir::Node& op, const ir::Tensor& w) {
  const auto l = ir::weight_layout(op, w.dims());
  if (!l) return std::nullopt;
  // scale_output_channels walks ConvTranspose's input channels in groups.
  if (op.is("ConvTranspose") && !l->group_divides) return std::nullopt;
  return l->out_channels;
}

ir::Tensor scale_output_channels(const ir::Node& op, const ir::Tensor& w, const std::vector<double>& k) {
  const ir::WeightLayout l = *ir::weight_layout(op, w.dims());
  const bool transpose = op.is("ConvTranspose");
  std::vector<double> v = to_f64(w);
  const auto& d = w.dims();
  int64_t inner0 = 1, inner1 = 1;  // elements per index of axis 0 / axis 1
  for (size_t i = 1; i < d.size(); ++i) inner0 *= d[i];
  for (size_t i = 2; i < d.size(); ++i) inner1 *= d[i];
  const int64_t cin_per_group = transpose ? d[0] / l.group : 1;
  for (size_t e = 0; e < v.size(); ++e) {
    const int64_t i = static_cast<int64_t>(e);
    int64_t c = 0;
    if (transpose) c = (i / inner0) / cin_per_group * d[1] + (i / inner1) % d[1];
    else if (l.out_axis == 0) c = i / inner0;
    else c = (i / inner1) % d[1];
    v[e] *= k[static_cast<size_t>(c)];
  }
  return from_f64(w.dtype(), d, v);
}

std::optional<std::vector<double>> effective_bias(const ir::Node& op, int64_t channels) {
  std::vector<double> b(static_cast<size_t>(channels), 0.0);
  if (op.is("MatMul")) return b;
  const ir::Value* bv = op.input(2);
  if (!bv) return b;
  if (!is_constant(bv) || !is_float(bv->initializer->dtype())) return std::nullopt;
  const ir::Tensor& t = *bv->initializer;
  double beta = 1.0;
  if (op.is("Gemm")) {
    beta = ir::GemmAttrs(op).beta();
    const auto& dd = t.dims();
    const bool per_channel = t.numel() == 1 || (dd.size() == 1 && dd[0] == channels) ||
                             (dd.size() == 2 && dd[0] == 1 && dd[1] == channels);
    if (!per_channel) return std::nullopt;
  } else if (t.numel() != channels) {
    return std::nullopt;
  }
  const std::vector<double> v = to_f64(t);
  for (size_t c = 0; c < b.size(); ++c) b[c] = beta * (v.size() == 1 ? v[0] : v[c]);
  return b;
}

void fold_affine_into(ir::Graph& g, ir::Node& op, const std::vector<double>& k, const std::vector<double>& d) {
  ir::Value* w = op.inputs[1];
  const ir::Tensor& wt = *w->initializer;
  const int64_t channels = static_cast<int64_t>(k.size());
  std::vector<double> b = *effective_bias(op, channels);
  for (size_t c = 0; c < b.size(); ++c) b[c] = b[c] * k[c] + d[c];
  const ir::DType dt = wt.dtype();
  ir::Value& nw = g.add_initializer(g.unique_name(w->name + "_folded"), scale_output_channels(op, wt, k));
  g.set_input(op, 1, &nw);
  drop_if_unused(w);
  if (op.is("MatMul")) return;  // no bias slot: the caller adds one
  ir::Value* old_b = op.input(2);
  if (op.is("Gemm")) {
    double beta = ir::GemmAttrs(op).beta();
    if (beta == 0.0 || !old_b) {
      beta = 1.0;
      op.set_attr(ir::Attribute{"beta", ir::AttrKind::Float, 1.0f, "", "", ""});
    }
    for (double& x : b) x /= beta;
  }
  const std::string hint = old_b ? old_b->name + "_folded" : op.name + "_bias";
  ir::Value& nb = g.add_initializer(g.unique_name(hint.empty() ? "bias" : hint), from_f64(dt, {channels}, b));
  g.set_input(op, 2, &nb);
  drop_if_unused(old_b);
}

}  // namespace mcc::transforms
