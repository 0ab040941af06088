// Conv fusion (see conv_fusion.h): which nodes after a Conv are absorbed, the folded weights
// (per-channel constant Add and inference BatchNormalization, folded in double once when the
// kernel is created) and the activation epilogue applied in the conv's output loop.
// dtypes: f32 only (other convs are not fused). Accumulation: f32 (folding in f64).
#include "backends/cpu/kernels/conv_fusion.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/fusion_match.h"
#if MCC_X86
#include "backends/cpu/kernels/conv_act_avx2.h"
#include "backends/cpu/kernels/conv_act_avx512.h"
#endif
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cpu {

namespace {
template <class T>
void apply_epilogue_portable(T* y, int64_t rows, int64_t cols, int64_t ld, const T* bias,
                             const Epilogue& e) {
  using A = Eigen::Array<T, Eigen::Dynamic, 1>;
  const T lo = static_cast<T>(e.alpha), hi = static_cast<T>(e.beta);
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * ld;
    Eigen::Map<A> a(row, cols);
    if (bias) a += bias[r];
    switch (e.act) {
      case Epilogue::Act::None: break;
      case Epilogue::Act::Relu: a = a.max(T(0)); break;
      case Epilogue::Act::Clip:
        for (int64_t j = 0; j < cols; ++j) {
          const T v = row[j];
          row[j] = v < lo ? lo : (v > hi ? hi : v);
        }
        break;
      case Epilogue::Act::Sigmoid: a = a.logistic(); break;
      case Epilogue::Act::SiLU: a = a * a.logistic(); break;
      case Epilogue::Act::LeakyRelu:
        for (int64_t j = 0; j < cols; ++j) row[j] = row[j] < T(0) ? lo * row[j] : row[j];
        break;
      case Epilogue::Act::HardSigmoid:
        for (int64_t j = 0; j < cols; ++j)
          row[j] = std::max(T(0), std::min(T(1), lo * row[j] + hi));
        break;
      case Epilogue::Act::HardSwish:
        for (int64_t j = 0; j < cols; ++j)
          row[j] = row[j] * std::max(T(0), std::min(T(1), row[j] / T(6) + T(0.5)));
        break;
    }
  }
}

#if MCC_X86
MCC_AVX512_BEGIN
// f32 on AVX-512: the same activations as the conv GEMM's register finish (conv_act_avx512.h),
// so every conv path gives the same values.
void apply_epilogue_avx512(float* y, int64_t rows, int64_t cols, int64_t ld, const float* bias,
                           const Epilogue& e) {
  const avx512::ActVec act(e);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * ld;
    const __m512 b = _mm512_set1_ps(bias ? bias[r] : 0.f);
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 m = cols - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (cols - j)) - 1);
      __m512 v = _mm512_maskz_loadu_ps(m, row + j);
      if (bias) v = _mm512_add_ps(v, b);
      _mm512_mask_storeu_ps(row + j, m, avx512::act_ps(v, act));
    }
  }
}
MCC_AVX512_END

MCC_AVX2_BEGIN
// f32 on AVX2 (no AVX-512): the activations of the AVX2 conv GEMM's finish (conv_act_avx2.h).
void apply_epilogue_avx2(float* y, int64_t rows, int64_t cols, int64_t ld, const float* bias, const Epilogue& e) {
  const avx2::ActVec act(e);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * ld;
    const __m256 b = _mm256_set1_ps(bias ? bias[r] : 0.f);
    for (int64_t j = 0; j < cols; j += 8) {
      const __m256i m = avx2::lane_mask(std::min<int64_t>(cols - j, 8));
      __m256 v = cols - j >= 8 ? _mm256_loadu_ps(row + j) : _mm256_maskload_ps(row + j, m);
      if (bias) v = _mm256_add_ps(v, b);
      v = avx2::act_ps(v, act);
      if (cols - j >= 8) _mm256_storeu_ps(row + j, v);
      else _mm256_maskstore_ps(row + j, m, v);
    }
  }
}
MCC_AVX2_END
#endif
}  // namespace

template <class T>
void apply_epilogue(T* y, int64_t rows, int64_t cols, int64_t ld, const T* bias,
                    const Epilogue& e) {
  apply_epilogue_portable(y, rows, cols, ld, bias, e);
}

template <>
void apply_epilogue<float>(float* y, int64_t rows, int64_t cols, int64_t ld, const float* bias,
                           const Epilogue& e) {
#if MCC_X86
  if (cpu_avx512()) return apply_epilogue_avx512(y, rows, cols, ld, bias, e);
  if (cpu_avx2()) return apply_epilogue_avx2(y, rows, cols, ld, bias, e);
#endif
  apply_epilogue_portable(y, rows, cols, ld, bias, e);
}
template void apply_epilogue<double>(double*, int64_t, int64_t, int64_t, const double*,
                                     const Epilogue&);
template void apply_epilogue<int32_t>(int32_t*, int64_t, int64_t, int64_t, const int32_t*,
                                      const Epilogue&);

namespace {

const ir::Tensor* f32_constant(const ir::Value* v) { return constant_of(v, ir::DType::F32); }

// Per-channel values of a constant added to an [N, M, spatial...] tensor of rank R: the
// constant broadcasts along every dim but the channel one (and keeps the shape).
std::optional<std::vector<double>> per_channel(const ir::Tensor& t, int64_t M, size_t R) {
  const auto& d = t.dims();
  if (d.size() > R) return std::nullopt;
  bool chan = false;
  for (size_t i = 0; i < d.size(); ++i) {
    const size_t pos = R - d.size() + i;
    if (d[i] == 1) continue;
    if (pos == 1 && d[i] == M) { chan = true; continue; }
    return std::nullopt;
  }
  auto v = t.data<float>();
  std::vector<double> out(static_cast<size_t>(M));
  for (int64_t c = 0; c < M; ++c) out[static_cast<size_t>(c)] = v[chan ? static_cast<size_t>(c) : 0];
  return out;
}

// The activation reading v alone (or the Sigmoid->Mul pair), with the nodes it absorbs.
std::optional<std::pair<Epilogue, std::vector<const ir::Node*>>> activation_after(const ir::Value* v) {
  auto m = match_activation(v, ir::DType::F32);
  if (!m) return std::nullopt;
  using A = ActivationMatch::Act;
  Epilogue e;
  switch (m->act) {
    case A::Relu: e.act = Epilogue::Act::Relu; break;
    case A::Clip: e.act = Epilogue::Act::Clip; break;
    case A::Sigmoid: e.act = Epilogue::Act::Sigmoid; break;
    case A::SiLU: e.act = Epilogue::Act::SiLU; break;
    case A::LeakyRelu: e.act = Epilogue::Act::LeakyRelu; break;
    case A::HardSigmoid: e.act = Epilogue::Act::HardSigmoid; break;
    case A::HardSwish: e.act = Epilogue::Act::HardSwish; break;
  }
  e.alpha = m->alpha;
  e.beta = m->beta;
  return std::make_pair(e, std::move(m->nodes));
}

}  // namespace

std::optional<FusedKernel> fuse_conv(const ir::Node& n) {
  if (!n.is("Conv") || !one_output(n) || n.inputs.size() < 2 || !n.inputs[0] || !n.inputs[1])
    return std::nullopt;
  const ir::Value* wv = n.inputs[1];
  const ir::Tensor* w = f32_constant(wv);
  if (!w && wv->dtype != ir::DType::F32) return std::nullopt;
  const ir::Value* bv = n.inputs.size() > 2 ? n.inputs[2] : nullptr;
  FusedKernel fk;
  const ir::Value* v = n.outputs[0];
  // Per-channel affine after the conv: y = conv(x) * scale[c] + shift[c].
  const bool foldable = w && w->rank() >= 3 && (!bv || f32_constant(bv));
  const int64_t M = foldable ? w->dims()[0] : 0;
  std::vector<double> scale, shift;
  bool folded = false;
  if (foldable) {
    scale.assign(static_cast<size_t>(M), 1.0);
    shift.assign(static_cast<size_t>(M), 0.0);
    if (bv) {
      const ir::Tensor* bt = f32_constant(bv);
      if (bt->numel() != M) return std::nullopt;
      auto b = bt->data<float>();
      for (int64_t c = 0; c < M; ++c) shift[static_cast<size_t>(c)] = b[static_cast<size_t>(c)];
    }
    for (;;) {
      const ir::Node* u = only_reader(v);
      if (!u || !one_output(*u)) break;
      if (u->is("Add") && u->inputs.size() == 2) {
        const ir::Value* other = u->inputs[0] == v ? u->inputs[1] : u->inputs[0];
        const ir::Tensor* t = other == v ? nullptr : f32_constant(other);
        if (!t) break;
        auto pc = per_channel(*t, M, w->dims().size());
        if (!pc) break;
        for (int64_t c = 0; c < M; ++c) shift[static_cast<size_t>(c)] += (*pc)[static_cast<size_t>(c)];
      } else if (u->is("BatchNormalization") && u->inputs.size() == 5 && u->inputs[0] == v) {
        const ir::BatchNormAttrs bn(*u);
        if (bn.training_mode() || bn.per_activation()) break;
        const ir::Tensor* prm[4];
        bool ok = true;
        for (int i = 0; i < 4; ++i) {
          prm[i] = f32_constant(u->inputs[static_cast<size_t>(i + 1)]);
          ok = ok && prm[i] && prm[i]->numel() == M;
        }
        if (!ok) break;
        const double eps = bn.epsilon();
        for (int64_t c = 0; c < M; ++c) {
          const size_t i = static_cast<size_t>(c);
          const double s = prm[0]->data<float>()[i] / std::sqrt(prm[3]->data<float>()[i] + eps);
          scale[i] *= s;
          shift[i] = (shift[i] - prm[2]->data<float>()[i]) * s + prm[1]->data<float>()[i];
        }
      } else {
        break;
      }
      fk.absorbed.push_back(u);
      v = u->outputs[0];
      folded = true;
    }
  }
  Epilogue ep;
  if (auto act = activation_after(v)) {
    ep = act->first;
    for (const ir::Node* a : act->second) fk.absorbed.push_back(a);
    v = act->second.back()->outputs[0];
  }
  if (fk.absorbed.empty()) return std::nullopt;
  fk.output = v;

  std::shared_ptr<const std::vector<float>> fw, fb;
  if (folded) {
    auto wd = w->data<float>();
    const size_t per = wd.size() / static_cast<size_t>(M);
    auto nw = std::make_shared<std::vector<float>>(wd.size());
    auto nb = std::make_shared<std::vector<float>>(static_cast<size_t>(M));
    for (size_t c = 0; c < static_cast<size_t>(M); ++c) {
      for (size_t k = 0; k < per; ++k)
        (*nw)[c * per + k] = static_cast<float>(static_cast<double>(wd[c * per + k]) * scale[c]);
      (*nb)[c] = static_cast<float>(shift[c]);
    }
    fw = std::move(nw);
    fb = std::move(nb);
  }
  const WindowAttrs attrs = WindowAttrs::parse(n);
  const int64_t group = ir::ConvAttrs(n).group();
  const std::vector<int64_t> wdims = w ? w->dims() : std::vector<int64_t>{};
  // W^T for one-group convs on small maps (conv_gemm_cl.cpp), from the weights the kernel runs
  // (not from an initializer that is also a graph input and runs as fed).
  std::shared_ptr<const std::vector<float>> wt;
  if (w && w->dtype() == ir::DType::F32 && (fw || !wv->is_graph_input)) {
    auto t = channel_lanes_weights(fw ? fw->data() : w->data<float>().data(), wdims, group,
                                 n.outputs[0]->shape.static_dims().value_or(std::vector<int64_t>{}));
    if (!t.empty()) wt = std::make_shared<const std::vector<float>>(std::move(t));
  }
  fk.kernel = [attrs, group, fw, fb, wt, wdims, ep](KernelContext& ctx) {
    const ir::Node& nd = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const bool has_b = ctx.has_input(2);
    const std::vector<int64_t>& wd = fw ? wdims : ctx.in(1).dims();
    if (x.dtype() != ir::DType::F32 || (!fw && ctx.in(1).dtype() != ir::DType::F32) ||
        (has_b && ctx.in(2).dtype() != ir::DType::F32))
      throw ModelError(nd.describe() + ": X, W and B must have the same dtype");
    const ConvProblem p = conv_problem(nd, attrs, group, x.dims(), wd);
    if (!fw && has_b && ctx.in(2).numel() != p.m)
      throw ModelError(nd.describe() + ": B must have " + std::to_string(p.m) + " values, got " +
                       std::to_string(ctx.in(2).numel()));
    const float* wp = fw ? fw->data() : ctx.in(1).data<float>().data();
    const float* bp = fb ? fb->data() : has_b ? ctx.in(2).data<float>().data() : nullptr;
    ir::Tensor& y = ctx.alloc_output_overwritten(0, ir::DType::F32, p.g.out_dims(p.n, p.m));
    conv_run<float>(ctx, p, x.data<float>().data(), wp, bp, y.mutable_data<float>().data(), &ep,
                    wt ? wt->data() : nullptr);
  };
  return fk;
}

}  // namespace mcc::backends::cpu
