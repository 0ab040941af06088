// MatMul + bias Add (+ erf GELU) fusion for the cpu backend (see matmul_fusion.h).
// dtypes: f32 only (the weight must be an f32 constant [K, N], the bias an f32 constant [N], the
// GELU constants f32 scalars). The GEMM is the packed-panel kernel of matmul_f32.cpp (Eigen when
// the build has no AVX-512); the weight is packed once per kernel.
#include "backends/cpu/kernels/matmul_fusion.h"

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/matmul_f32.h"
#include "backends/fusion_match.h"
#include "ir/errors.h"

namespace mcc::backends::cpu {
namespace {

const ir::Tensor* f32_constant(const ir::Value* v) { return constant_of(v, ir::DType::F32); }

struct Gelu {
  float div = 0.f, add = 0.f, mul = 0.f;
};

// The erf GELU reading v (v's only readers are the Div and the first Mul of the chain), with
// the nodes it absorbs in order.
std::optional<std::pair<Gelu, std::vector<const ir::Node*>>> gelu_after(const ir::Value* v) {
  if (v->uses.size() != 2 || is_graph_output(v)) return std::nullopt;
  const ir::Node* d = nullptr;
  const ir::Node* m1 = nullptr;
  for (const auto& use : v->uses) {
    const ir::Node* u = use.user;
    if (u->owner != v->owner || !one_output(*u)) return std::nullopt;
    if (u->is("Div") && u->inputs.size() == 2 && u->inputs[0] == v && u->inputs[1] != v) d = u;
    else if (u->is("Mul")) m1 = u;
  }
  if (!d || !m1) return std::nullopt;
  Gelu g;
  auto c1 = scalar_f32_constant(d->inputs[1]);
  const ir::Node* e = only_reader(d->outputs[0]);
  if (!c1 || !e || !e->is("Erf") || !one_output(*e)) return std::nullopt;
  const ir::Node* a = only_reader(e->outputs[0]);
  if (!a || !a->is("Add") || !one_output(*a)) return std::nullopt;
  auto c2 = scalar_f32_constant(other_input(*a, e->outputs[0]));
  if (!c2 || only_reader(a->outputs[0]) != m1 || other_input(*m1, v) != a->outputs[0]) return std::nullopt;
  const ir::Node* m2 = only_reader(m1->outputs[0]);
  if (!m2 || !m2->is("Mul") || !one_output(*m2)) return std::nullopt;
  auto c3 = scalar_f32_constant(other_input(*m2, m1->outputs[0]));
  if (!c3) return std::nullopt;
  g.div = *c1;
  g.add = *c2;
  g.mul = *c3;
  return std::make_pair(g, std::vector<const ir::Node*>{d, e, a, m1, m2});
}

struct Packed {
  std::mutex mu;
  bool ready = false;
  PackedB b;
};

}  // namespace

std::optional<FusedKernel> fuse_matmul(const ir::Node& n) {
  if (!n.is("MatMul") || !one_output(n) || n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1])
    return std::nullopt;
  const ir::Tensor* w = f32_constant(n.inputs[1]);
  if (!w || w->rank() != 2) return std::nullopt;
  const int64_t K = w->dims()[0], N = w->dims()[1];
  const ir::Value* v = n.outputs[0];
  const ir::Node* add = only_reader(v);
  if (!add || !add->is("Add") || !one_output(*add)) return std::nullopt;
  const ir::Tensor* bias = f32_constant(other_input(*add, v));
  if (!bias || bias->rank() != 1 || bias->numel() != N) return std::nullopt;
  FusedKernel fk;
  fk.absorbed.push_back(add);
  v = add->outputs[0];
  std::optional<Gelu> gelu;
  if (auto g = gelu_after(v)) {
    gelu = g->first;
    for (const ir::Node* u : g->second) fk.absorbed.push_back(u);
    v = g->second.back()->outputs[0];
  }
  fk.output = v;
  auto b = std::make_shared<const std::vector<float>>(bias->data<float>().begin(), bias->data<float>().end());
  auto packed = std::make_shared<Packed>();
  fk.kernel = [K, N, b, gelu, packed](KernelContext& ctx) {
    const ir::Node& nd = ctx.node();
    const ir::Tensor& a = ctx.in(0);
    const ir::Tensor& wt = ctx.in(1);
    if (a.dtype() != ir::DType::F32 || wt.dtype() != ir::DType::F32)
      throw ModelError(nd.describe() + ": MatMul operands must have the same dtype");
    if (a.rank() < 1 || a.dims().back() != K)
      throw ModelError(nd.describe() + ": MatMul A must end in K=" + std::to_string(K));
    std::vector<int64_t> od = a.dims();
    od.back() = N;
    const int64_t M = K ? a.numel() / K : 0;
    ir::Tensor& y = ctx.alloc_output_overwritten(0, ir::DType::F32, od);
    float* yp = y.mutable_data<float>().data();
    const float* ap = a.data<float>().data();
    if (M == 0 || N == 0) return;
    if (matmul_f32_available() && ctx.keeps_weight_copies()) {
      {
        std::lock_guard<std::mutex> lock(packed->mu);
        if (!packed->ready) {
          pack_b_f32(wt.data<float>().data(), N, K, N, packed->b);
          packed->ready = true;
        }
      }
      matmul_packed_f32(ctx, M, ap, K, packed->b, yp, N);
    } else {
      gemm_parallel<float>(ctx, M, N, K, ap, K, false, wt.data<float>().data(), N, false, yp, N, false);
    }
    using Row = Eigen::Array<float, Eigen::Dynamic, 1>;
    const Eigen::Map<const Row> bm(b->data(), N);
    parallel_for_work(ctx, M, N * (gelu ? 40 : 1), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        Eigen::Map<Row> row(yp + r * N, N);
        row += bm;
        if (gelu) row = row * ((row / gelu->div).erf() + gelu->add) * gelu->mul;
      }
    });
  };
  return fk;
}

}  // namespace mcc::backends::cpu
