// Decomposed LayerNorm fusion (see layer_norm_fusion.h): pattern matching at the first
// ReduceMean and the row kernel.
#include "backends/cpu/kernels/layer_norm_fusion.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/fusion_match.h"
#include "ir/errors.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;

// The one node of `op` reading v alone (only reader, same graph, one output, no domain).
const ir::Node* next_node(const ir::Value* v, const char* op) {
  const ir::Node* u = only_reader(v);
  return u && u->is(op) && u->domain.empty() && one_output(*u) ? u : nullptr;
}

// A ReduceMean of x over the last axis only, keeping dims; `shaped` (x or a value of x's shape)
// gives the rank when the axis is not -1.
bool last_axis_mean(const ir::Node& n, const ir::Value* x, const ir::Value* shaped) {
  if (!n.is("ReduceMean") || !n.domain.empty() || !one_output(n) || n.inputs.empty() || n.inputs[0] != x) return false;
  if (n.attr_int("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes;
  if (n.since_version >= 18) {
    if (n.inputs.size() < 2 || !n.inputs[1]) return false;
    const ir::Tensor* t = constant_of(n.inputs[1], DType::I64);
    if (!t || t->numel() != 1) return false;
    axes = {t->data<int64_t>()[0]};
  } else {
    if (n.inputs.size() != 1) return false;
    axes = n.attr_ints("axes");
  }
  if (axes.size() != 1) return false;
  if (axes[0] == -1) return true;
  return shaped->shape.dims && axes[0] >= 0 && axes[0] + 1 == static_cast<int64_t>(shaped->shape.dims->size());
}

struct LayerNormPlan {
  float eps = 0.f;
  std::vector<float> gamma, beta;  // empty when absent; size 1 broadcasts
  std::string what;
};

void run_rows(const LayerNormPlan& p, const float* x, float* y, int64_t N, int64_t r0, int64_t r1) {
  const float* g = p.gamma.empty() ? nullptr : p.gamma.data();
  const float* b = p.beta.empty() ? nullptr : p.beta.data();
  const bool g1 = p.gamma.size() == 1, b1 = p.beta.size() == 1;
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * N;
    float* yr = y + r * N;
    double s = 0;
    for (int64_t j = 0; j < N; ++j) s += static_cast<double>(xr[j]);
    const float mean = static_cast<float>(s / static_cast<double>(N));
    double q = 0;
    for (int64_t j = 0; j < N; ++j) {
      const float d = xr[j] - mean;
      yr[j] = d;  // kept for the division below
      q += static_cast<double>(d * d);
    }
    const float var = static_cast<float>(q / static_cast<double>(N));
    const float sd = std::sqrt(var + p.eps);
    for (int64_t j = 0; j < N; ++j) {
      float v = yr[j] / sd;
      if (g) v = v * g[g1 ? 0 : j];
      if (b) v = v + b[b1 ? 0 : j];
      yr[j] = v;
    }
  }
}

}  // namespace

std::optional<FusedKernel> fuse_layer_norm(const ir::Node& n) {
  if (n.inputs.empty() || !n.inputs[0]) return std::nullopt;
  const ir::Value* x = n.inputs[0];
  if (!last_axis_mean(n, x, x)) return std::nullopt;
  const ir::Node* sub = next_node(n.outputs[0], "Sub");
  if (!sub || sub->inputs.size() != 2 || sub->inputs[0] != x || sub->inputs[1] != n.outputs[0]) return std::nullopt;
  // d = X - mean is read by exactly the Pow and the Div.
  const ir::Value* d = sub->outputs[0];
  if (d->uses.size() != 2 || is_graph_output(d)) return std::nullopt;
  const ir::Node* pow = nullptr;
  const ir::Node* div = nullptr;
  for (const auto& u : d->uses) {
    if (u.user->owner != n.owner || !u.user->domain.empty() || !one_output(*u.user)) return std::nullopt;
    if (u.user->is("Pow")) pow = u.user;
    else if (u.user->is("Div")) div = u.user;
  }
  if (!pow || !div || pow->inputs.size() != 2 || pow->inputs[0] != d || scalar_f32_constant(pow->inputs[1]) != 2.f)
    return std::nullopt;
  const ir::Node* mean2 = only_reader(pow->outputs[0]);
  if (!mean2 || !last_axis_mean(*mean2, pow->outputs[0], x)) return std::nullopt;
  // Both means reduce the last axis of tensors of one shape (Pow keeps d's shape).
  const ir::Node* add_eps = next_node(mean2->outputs[0], "Add");
  if (!add_eps) return std::nullopt;
  const auto eps = scalar_f32_constant(other_input(*add_eps, mean2->outputs[0]));
  if (!eps) return std::nullopt;
  const ir::Node* sqrt = next_node(add_eps->outputs[0], "Sqrt");
  if (!sqrt || sqrt->inputs.size() != 1 || only_reader(sqrt->outputs[0]) != div) return std::nullopt;
  if (div->inputs.size() != 2 || div->inputs[0] != d || div->inputs[1] != sqrt->outputs[0]) return std::nullopt;

  auto plan = std::make_shared<LayerNormPlan>();
  plan->eps = *eps;
  plan->what = n.describe();
  FusedKernel fk;
  fk.absorbed = {sub, pow, mean2, add_eps, sqrt, div};
  const ir::Value* out = div->outputs[0];
  // Optional affine: * gamma, then + beta (f32 constants of rank <= 1).
  auto affine = [&](const char* op, std::vector<float>& dst) {
    const ir::Node* a = next_node(out, op);
    if (!a) return;
    const ir::Tensor* t = constant_of(other_input(*a, out), DType::F32);
    if (!t || t->rank() > 1 || t->numel() < 1) return;
    auto v = t->data<float>();
    dst.assign(v.begin(), v.end());
    fk.absorbed.push_back(a);
    out = a->outputs[0];
  };
  affine("Mul", plan->gamma);
  affine("Add", plan->beta);
  fk.output = out;
  fk.kernel = [plan](KernelContext& ctx) {
    const ir::Tensor& xt = ctx.in(0);
    if (xt.dtype() != DType::F32)
      throw ModelError(plan->what + ": fused LayerNorm expects f32, got " + ir::dtype_name(xt.dtype()));
    if (xt.rank() < 1) throw ModelError(plan->what + ": ReduceMean over axis -1 needs rank >= 1");
    const int64_t N = xt.dims().back();
    for (const auto* v : {&plan->gamma, &plan->beta})
      if (!v->empty() && v->size() != 1 && static_cast<int64_t>(v->size()) != N)
        throw ModelError(plan->what + ": LayerNorm scale/bias of " + std::to_string(v->size()) +
                         " values do not broadcast to the last axis of " + std::to_string(N));
    ir::Tensor& yt = ctx.alloc_output_overwritten(0, DType::F32, xt.dims());
    const int64_t rows = N == 0 ? 0 : xt.numel() / N;
    if (rows == 0) return;
    const float* xp = xt.data<float>().data();
    float* yp = yt.mutable_data<float>().data();
    parallel_for_work(ctx, rows, 8 * N, [&](int64_t r0, int64_t r1) { run_rows(*plan, xp, yp, N, r0, r1); });
  };
  return fk;
}

}  // namespace mcc::backends::cpu
