// Fused f32 elementwise chains for the cpu backend (see ew_chain_fusion.h).
// dtypes: f32 only (every constant operand must be an f32 scalar of rank 0 or 1, which also
// pins the chain's dtype). Opset: Add/Sub/Mul/Div from 7 (no legacy broadcast attribute), Clip
// every version (attributes before 11, constant inputs from 11).
#include "backends/cpu/kernels/ew_chain_fusion.h"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/fusion_match.h"
#include "ir/errors.h"

namespace mcc::backends::cpu {
namespace {

constexpr size_t kMaxSteps = 16;  // chain length cap (one L1 block per intermediate)
constexpr int64_t kBlock = 256;   // elements per block

enum class Op { Add, Sub, Mul, Div, Clip };

struct Operand {
  int reg = -1;   // >= 0: register (0 = chain input, k + 1 = output of step k); -1: constant c
  float c = 0.f;
};

struct Step {
  Op op = Op::Add;
  Operand a, b;  // Clip reads a only
  float lo = 0.f, hi = 0.f;
};

using Regs = std::unordered_map<const ir::Value*, int>;

// An f32 constant with one element and rank 0 or 1 (rank 1 matters only for a rank-0 input).
const ir::Tensor* scalar_f32(const ir::Value* v) {
  const ir::Tensor* t = constant_of(v, ir::DType::F32);
  return t && t->numel() == 1 && t->rank() <= 1 ? t : nullptr;
}

std::optional<Operand> operand_of(const ir::Value* v, const Regs& regs, bool& rank1) {
  if (!v) return std::nullopt;
  if (auto it = regs.find(v); it != regs.end()) return Operand{it->second, 0.f};
  if (const ir::Tensor* t = scalar_f32(v)) {
    rank1 = rank1 || t->rank() == 1;
    return Operand{-1, t->data<float>()[0]};
  }
  return std::nullopt;
}

// The step computing u from registers and constants, or nullopt.
std::optional<Step> step_of(const ir::Node& u, const Regs& regs, bool& rank1) {
  if (!u.domain.empty() || !one_output(u)) return std::nullopt;
  Step s;
  bool r1 = rank1;
  if (u.is("Add") || u.is("Sub") || u.is("Mul") || u.is("Div")) {
    if (u.since_version > 0 && u.since_version < 7) return std::nullopt;
    if (u.inputs.size() != 2) return std::nullopt;
    s.op = u.is("Add") ? Op::Add : u.is("Sub") ? Op::Sub : u.is("Mul") ? Op::Mul : Op::Div;
    auto a = operand_of(u.inputs[0], regs, r1), b = operand_of(u.inputs[1], regs, r1);
    if (!a || !b || (a->reg < 0 && b->reg < 0)) return std::nullopt;
    s.a = *a;
    s.b = *b;
  } else if (u.is("Clip")) {
    if (u.inputs.empty()) return std::nullopt;
    auto it = regs.find(u.inputs[0]);
    if (it == regs.end()) return std::nullopt;
    s.op = Op::Clip;
    s.a = Operand{it->second, 0.f};
    s.lo = std::numeric_limits<float>::lowest();
    s.hi = std::numeric_limits<float>::max();
    if (u.since_version > 0 && u.since_version < 11) {
      s.lo = u.attr_float("min", s.lo);
      s.hi = u.attr_float("max", s.hi);
    } else {
      for (size_t k = 1; k < u.inputs.size() && k < 3; ++k) {
        const ir::Value* bv = u.inputs[k];
        if (!bv || bv->name.empty()) continue;
        const ir::Tensor* t = scalar_f32(bv);
        if (!t) return std::nullopt;
        (k == 1 ? s.lo : s.hi) = t->data<float>()[0];
      }
    }
  } else {
    return std::nullopt;
  }
  rank1 = r1;
  return s;
}

template <class F>
void apply_binary(const Step& s, const float* const* r, float* d, int64_t m, F f) {
  if (s.a.reg >= 0 && s.b.reg >= 0) {
    const float* pa = r[s.a.reg];
    const float* pb = r[s.b.reg];
    for (int64_t i = 0; i < m; ++i) d[i] = f(pa[i], pb[i]);
  } else if (s.a.reg >= 0) {
    const float* pa = r[s.a.reg];
    const float cb = s.b.c;
    for (int64_t i = 0; i < m; ++i) d[i] = f(pa[i], cb);
  } else {
    const float ca = s.a.c;
    const float* pb = r[s.b.reg];
    for (int64_t i = 0; i < m; ++i) d[i] = f(ca, pb[i]);
  }
}

// One step over m elements; r[k] points at register k's block.
void run_step(const Step& s, const float* const* r, float* d, int64_t m) {
  switch (s.op) {
    case Op::Add: apply_binary(s, r, d, m, [](float a, float b) { return a + b; }); break;
    case Op::Sub: apply_binary(s, r, d, m, [](float a, float b) { return a - b; }); break;
    case Op::Mul: apply_binary(s, r, d, m, [](float a, float b) { return a * b; }); break;
    case Op::Div: apply_binary(s, r, d, m, [](float a, float b) { return a / b; }); break;
    case Op::Clip: {
      const float* pa = r[s.a.reg];
      const float lo = s.lo, hi = s.hi;
      for (int64_t i = 0; i < m; ++i) {
        // As the Clip kernel: NaN passes through; min > max yields max.
        const float v = pa[i];
        const float t = v < lo ? lo : v;
        d[i] = t > hi ? hi : t;
      }
      break;
    }
  }
}

bool in_chain(const std::vector<const ir::Node*>& chain, size_t len, const ir::Node* u) {
  return std::find(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(len), u) !=
         chain.begin() + static_cast<std::ptrdiff_t>(len);
}

}  // namespace

std::optional<FusedKernel> fuse_elementwise_chain(const ir::Node& n) {
  if (!(n.is("Add") || n.is("Sub") || n.is("Mul") || n.is("Div") || n.is("Clip")) || !n.domain.empty())
    return std::nullopt;
  // The chain input: the one non-constant input of the first node.
  size_t x_index = n.inputs.size();
  for (size_t k = 0; k < n.inputs.size() && k < 2; ++k) {
    const ir::Value* v = n.inputs[k];
    if (!v || v->name.empty() || scalar_f32(v)) continue;
    if (x_index < n.inputs.size() && n.inputs[x_index] != v) return std::nullopt;  // two tensors
    if (x_index == n.inputs.size()) x_index = k;
  }
  if (x_index == n.inputs.size()) return std::nullopt;
  if (n.is("Clip") && x_index != 0) return std::nullopt;
  const ir::Value* x = n.inputs[x_index];
  const ir::Graph* g = n.owner;

  Regs regs{{x, 0}};
  bool rank1 = false;
  std::vector<const ir::Node*> chain;
  std::vector<Step> steps;
  std::vector<bool> rank1_at;  // rank1 after each step
  auto first = step_of(n, regs, rank1);
  if (!first) return std::nullopt;
  chain.push_back(&n);
  steps.push_back(*first);
  rank1_at.push_back(rank1);
  regs.emplace(n.outputs[0], 1);
  // Grow: any reader of a chain-computed value whose inputs are all registers or constants.
  while (chain.size() < kMaxSteps) {
    const ir::Node* next = nullptr;
    std::optional<Step> ns;
    bool r1 = rank1;
    for (size_t k = 0; k < chain.size() && !next; ++k) {
      for (const auto& use : chain[k]->outputs[0]->uses) {
        const ir::Node* u = use.user;
        if (u->owner != g || in_chain(chain, chain.size(), u)) continue;
        r1 = rank1;
        if ((ns = step_of(*u, regs, r1))) {
          next = u;
          break;
        }
      }
    }
    if (!next) break;
    rank1 = r1;
    regs.emplace(next->outputs[0], static_cast<int>(chain.size()) + 1);
    chain.push_back(next);
    steps.push_back(*ns);
    rank1_at.push_back(rank1);
  }
  // The longest prefix whose intermediates are read only inside it.
  size_t len = 0;
  for (size_t k = chain.size(); k >= 2 && !len; --k) {
    bool ok = true;
    for (size_t j = 0; j + 1 < k && ok; ++j) {
      const ir::Value* v = chain[j]->outputs[0];
      if (is_graph_output(v)) ok = false;
      for (const auto& use : v->uses)
        if (!in_chain(chain, k, use.user)) ok = false;
    }
    if (ok) len = k;
  }
  if (len < 2) return std::nullopt;
  chain.resize(len);
  steps.resize(len);
  const bool out_rank1 = rank1_at[len - 1];

  FusedKernel fk;
  fk.absorbed.assign(chain.begin() + 1, chain.end());
  fk.output = chain.back()->outputs[0];
  fk.kernel = [steps, x_index, out_rank1, what = n.describe()](KernelContext& ctx) {
    const ir::Tensor& xt = ctx.in(x_index);
    if (xt.dtype() != ir::DType::F32)
      throw ModelError(what + ": fused elementwise chain expects f32, got " + ir::dtype_name(xt.dtype()));
    std::vector<int64_t> dims = xt.dims();
    if (dims.empty() && out_rank1) dims = {1};
    ir::Tensor& yt = ctx.alloc_output_overwritten(0, ir::DType::F32, std::move(dims));
    const float* xp = xt.data<float>().data();
    float* yp = yt.mutable_data<float>().data();
    const size_t ns = steps.size();
    parallel_for_work(ctx, xt.numel(), static_cast<int64_t>(ns), [&](int64_t b, int64_t e) {
      alignas(64) float buf[kMaxSteps - 1][kBlock];
      const float* r[kMaxSteps + 1];
      for (int64_t s = b; s < e; s += kBlock) {
        const int64_t m = std::min(kBlock, e - s);
        r[0] = xp + s;
        for (size_t k = 0; k < ns; ++k) {
          float* d = k + 1 == ns ? yp + s : buf[k];
          run_step(steps[k], r, d, m);
          r[k + 1] = d;
        }
      }
    });
  };
  return fk;
}

}  // namespace mcc::backends::cpu
