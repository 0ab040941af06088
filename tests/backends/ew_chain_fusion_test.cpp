// Fused f32 elementwise chains (backends/cpu/kernels/ew_chain_fusion.h): the chain absorbs the
// decomposed HardSwish and affine steps, the fused outputs are bit-identical to the node-by-node
// outputs at 1 and 2 threads (NaN, infinities and block/chunk tails included), and chains stop
// before intermediates read elsewhere, graph outputs and non-scalar operands.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/ew_chain_fusion.h"
#include "backends/executor.h"
#include "backends/thread_pool.h"
#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::Tensor;

namespace {

struct Builder {
  std::unique_ptr<ir::Model> m = std::make_unique<ir::Model>();
  ir::Graph* g = nullptr;
  int consts = 0;
  Builder() {
    m->ir_version = 8;
    m->opset_imports = {{"", 13}};
    m->graph = std::make_unique<ir::Graph>();
    g = m->graph.get();
  }
  ir::Value* input(const std::string& name) {
    ir::Value& x = g->add_value(name);
    x.dtype = ir::DType::F32;
    x.is_graph_input = true;
    g->inputs.push_back(&x);
    return &x;
  }
  ir::Value* scalar(float v, bool rank1 = false) {
    const std::string name = "c" + std::to_string(consts++);
    return &g->add_initializer(name, rank1 ? tensor<float>({1}, {v}) : tensor<float>({}, {v}));
  }
  ir::Value* constant_node(float v) {
    const std::string name = "k" + std::to_string(consts++);
    ir::Node& n = g->add_node("Constant", "", name, {}, {name});
    n.since_version = 13;
    n.set_attr(attr_t("value", tensor<float>({}, {v})));
    return n.outputs[0];
  }
  ir::Node& node(const std::string& op, std::vector<ir::Value*> ins, const std::string& out, int opset = 13) {
    ir::Node& n = g->add_node(op, "", out, ins, {out});
    n.since_version = opset;
    return n;
  }
  ir::Value* op(const std::string& op, std::vector<ir::Value*> ins, const std::string& out) {
    return node(op, std::move(ins), out).outputs[0];
  }
};

const ir::Node& node_named(const ir::Model& m, const std::string& name) {
  for (const ir::Node* n : m.graph->nodes())
    if (n->name == name) return *n;
  FAIL("no node " << name);
  throw 0;
}

std::vector<Tensor> run(const ir::Model& m, const Tensor& x, bool fuse, int threads) {
  backends::ExecOptions o;
  o.threads = threads;
  o.fuse = fuse;
  backends::Executor ex(m, o);
  std::vector<Tensor> out;
  for (auto& r : ex.run({{"x", backends::RValue::of(x)}})) out.push_back(r.tensor);
  backends::ThreadPool::configure(0);  // back to the default size
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dims() == b.dims() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

Tensor input_with_specials(std::vector<int64_t> dims, unsigned seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  auto v = random_values(n, seed);
  for (float& f : v) f *= 8.f;  // cover both sides of the HardSwish clip
  if (n > 7) {
    v[1] = std::numeric_limits<float>::quiet_NaN();
    v[3] = std::numeric_limits<float>::infinity();
    v[5] = -std::numeric_limits<float>::infinity();
    v[7] = -0.f;
  }
  return tensor<float>(dims, v);
}

// x -> Mul(s) -> Add(b) = t; HardSwish(t) decomposed = Div(Mul(t, Clip(Add(t, 3), 0, 6)), 6);
// then Mul(s2) -> Add(b2) = y. Also Sub and Div with the constant on the left.
std::unique_ptr<ir::Model> hardswish_chain() {
  Builder b;
  ir::Value* x = b.input("x");
  ir::Value* t = b.op("Add", {b.op("Mul", {x, b.scalar(0.75f)}, "m0"), b.scalar(-0.5f, true)}, "t");
  ir::Value* a3 = b.op("Add", {t, b.constant_node(3.f)}, "a3");
  ir::Value* cl = b.op("Clip", {a3, b.scalar(0.f), b.scalar(6.f)}, "cl");
  ir::Value* hs = b.op("Div", {b.op("Mul", {t, cl}, "mt"), b.scalar(6.f)}, "hs");
  ir::Value* s = b.op("Sub", {b.scalar(1.5f), b.op("Mul", {hs, b.scalar(1.25f)}, "m2")}, "s");
  ir::Value* y = b.op("Div", {b.scalar(2.f), b.op("Add", {s, b.scalar(7.f)}, "a7")}, "y");
  b.g->outputs.push_back(y);
  return std::move(b.m);
}

}  // namespace

TEST_CASE("Elementwise chain fusion: the decomposed HardSwish with affine steps fuses into one kernel") {
  auto m = hardswish_chain();
  auto fk = backends::cpu::fuse_elementwise_chain(node_named(*m, "m0"));
  REQUIRE(fk.has_value());
  CHECK(fk->absorbed.size() == 9);  // t, a3, cl, mt, hs, m2, s, a7, y
  CHECK(fk->output == m->graph->outputs[0]);
  // Starting at the HardSwish: its input t (read twice) is the chain input, so it fuses too.
  auto hs = backends::cpu::fuse_elementwise_chain(node_named(*m, "a3"));
  REQUIRE(hs.has_value());
  CHECK(hs->absorbed.size() == 7);
}

TEST_CASE("Elementwise chain fusion: fused outputs are bit-identical to node-by-node outputs") {
  auto m = hardswish_chain();
  for (const auto& dims : std::vector<std::vector<int64_t>>{{2, 16, 50, 33}, {7}, {3, 257}, {1, 1, 1}}) {
    const Tensor x = input_with_specials(dims, 5);
    const Tensor plain = run(*m, x, false, 1).at(0);
    for (int threads : {1, 2}) {
      const Tensor fused = run(*m, x, true, threads).at(0);
      CHECK(same_bits(fused, plain));
    }
  }
}

TEST_CASE("Elementwise chain fusion: rank-0 input with a rank-1 constant gives [1] as unfused") {
  auto m = hardswish_chain();
  const Tensor x = tensor<float>({}, {2.5f});
  const Tensor plain = run(*m, x, false, 1).at(0), fused = run(*m, x, true, 1).at(0);
  CHECK(plain.dims() == std::vector<int64_t>{1});
  CHECK(same_bits(fused, plain));
}

TEST_CASE("Elementwise chain fusion: stops before shared intermediates, graph outputs, tensor operands") {
  Builder b;
  ir::Value* x = b.input("x");
  ir::Value* bias = &b.g->add_initializer("bias", tensor<float>({3}, {1.f, 2.f, 3.f}));
  ir::Value* a = b.op("Add", {x, b.scalar(1.f)}, "a");
  ir::Value* c = b.op("Clip", {b.op("Mul", {a, b.scalar(2.f)}, "m")}, "c");  // no bounds
  ir::Value* d = b.op("Div", {c, b.scalar(3.f)}, "d");                          // also a graph output
  ir::Value* e = b.op("Sub", {d, b.scalar(0.5f)}, "e");
  ir::Value* f = b.op("Add", {e, bias}, "f");  // per-channel operand: not fusable
  ir::Node& clip6 = b.node("Clip", {f}, "g", 6);
  clip6.set_attr(attr_f("min", -1.f));
  clip6.set_attr(attr_f("max", 1.5f));
  ir::Value* h = b.op("Mul", {clip6.outputs[0], b.scalar(4.f)}, "h");
  b.g->outputs = {h, d};
  auto& m = *b.m;

  auto f1 = backends::cpu::fuse_elementwise_chain(node_named(m, "a"));
  REQUIRE(f1.has_value());
  CHECK(f1->absorbed.size() == 3);  // m, c, d: d is a graph output, so the chain ends there
  CHECK(f1->output == d);
  CHECK_FALSE(backends::cpu::fuse_elementwise_chain(node_named(m, "f")).has_value());  // tensor bias
  auto f2 = backends::cpu::fuse_elementwise_chain(node_named(m, "g"));  // Clip-6 attributes
  REQUIRE(f2.has_value());
  CHECK(f2->absorbed.size() == 1);

  const Tensor x_t = input_with_specials({4, 5, 3}, 9);
  const auto plain = run(m, x_t, false, 1);
  for (int threads : {1, 2}) {
    const auto fused = run(m, x_t, true, threads);
    REQUIRE(fused.size() == 2);
    CHECK(same_bits(fused[0], plain[0]));
    CHECK(same_bits(fused[1], plain[1]));
  }
}
