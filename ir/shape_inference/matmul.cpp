// Shape rules of matrix products: Gemm (2-D, transA/transB) and MatMul (numpy matmul: 1-D
// operands promoted and dropped again, batch dims broadcast). A contraction mismatch is left
// unknown for the runtime to report.
#include "ir/op_attrs.h"
#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {
namespace {

void gemm(const NodeShapes& c) {
  auto x = c.dims(0), b = c.dims(1);
  if (!x || x->size() != 2 || !b || b->size() != 2) return;
  const GemmAttrs a(c.node);
  const int64_t m = a.trans_a() ? (*x)[1] : (*x)[0];
  const int64_t nn = a.trans_b() ? (*b)[0] : (*b)[1];
  c.out(0, c.dt0(), Dims{m, nn});
}

void matmul(const NodeShapes& c) {
  auto x = c.dims(0), b = c.dims(1);
  if (!x || !b || b->empty() || x->empty()) return;
  Dims a2 = *x, b2 = *b;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  if (a2.back() != b2[b2.size() - 2]) return;
  auto batch = broadcast({Dims(a2.begin(), a2.end() - 2), Dims(b2.begin(), b2.end() - 2)});
  if (!batch) return;
  Dims o = *batch;
  if (x->size() > 1) o.push_back(a2[a2.size() - 2]);
  if (b->size() > 1) o.push_back(b2.back());
  c.out(0, c.dt0(), o);
}

constexpr NamedRule kRules[] = {{"Gemm", gemm}, {"MatMul", matmul}};

}  // namespace

std::span<const NamedRule> matmul_rules() { return kRules; }

}  // namespace mcc::ir::shape_rules
