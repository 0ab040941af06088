// Decomposed LayerNorm fusion (backends/cpu/kernels/layer_norm_fusion.h): the exported
// ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] pattern runs as one kernel (axes as an
// attribute and, from opset 18, as an input), its outputs match the node-by-node outputs within a
// few ulp and an f64 reference within f32 rounding, are bit-identical at 1 and 2 threads, and the
// pattern is left alone when an axis other than the last is reduced, an intermediate is read
// elsewhere or the exponent is not 2.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/layer_norm_fusion.h"
#include "backends/executor.h"
#include "backends/thread_pool.h"
#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::Tensor;

namespace {

struct LnOptions {
  int opset = 13;
  std::vector<int64_t> axes = {-1};
  int rank = 3;                 // declared rank of x (0: unknown)
  bool gamma = true, beta = true, gamma_scalar = false;
  float exponent = 2.f;
  bool d_is_output = false;     // X - mean also a graph output
  int64_t n = 0;                // size of the last axis (for gamma/beta)
};

struct LnModel {
  std::unique_ptr<ir::Model> m = std::make_unique<ir::Model>();
  const ir::Node* first = nullptr;
};

LnModel layer_norm_model(const LnOptions& o) {
  LnModel r;
  r.m->ir_version = 8;
  r.m->opset_imports = {{"", o.opset}};
  r.m->graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *r.m->graph;
  ir::Value& x = g.add_value("x");
  x.dtype = ir::DType::F32;
  x.is_graph_input = true;
  if (o.rank > 0) x.shape.dims = std::vector<ir::Dim>(static_cast<size_t>(o.rank));
  g.inputs.push_back(&x);
  int k = 0;
  auto init = [&](Tensor t) { return &g.add_initializer("c" + std::to_string(k++), std::move(t)); };
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, const std::string& out) -> ir::Node& {
    ir::Node& n = g.add_node(op, "", out, std::move(ins), {out});
    n.since_version = o.opset;
    return n;
  };
  auto mean = [&](ir::Value* v, const std::string& out) -> ir::Node& {
    if (o.opset >= 18) return node("ReduceMean", {v, init(tensor<int64_t>({1}, o.axes))}, out);
    ir::Node& n = node("ReduceMean", {v}, out);
    n.set_attr(attr_is("axes", o.axes));
    return n;
  };
  ir::Node& m1 = mean(&x, "mean");
  r.first = &m1;
  ir::Value* d = node("Sub", {&x, m1.outputs[0]}, "d").outputs[0];
  ir::Value* sq = node("Pow", {d, init(tensor<float>({}, {o.exponent}))}, "sq").outputs[0];
  ir::Value* var = mean(sq, "var").outputs[0];
  ir::Value* ve = node("Add", {var, init(tensor<float>({}, {1e-5f}))}, "ve").outputs[0];
  ir::Value* sd = node("Sqrt", {ve}, "sd").outputs[0];
  ir::Value* y = node("Div", {d, sd}, "nrm").outputs[0];
  std::vector<float> gv(static_cast<size_t>(o.n)), bv(static_cast<size_t>(o.n));
  for (int64_t i = 0; i < o.n; ++i) {
    gv[static_cast<size_t>(i)] = 0.5f + 0.01f * static_cast<float>(i);
    bv[static_cast<size_t>(i)] = -0.2f + 0.003f * static_cast<float>(i);
  }
  if (o.gamma) y = node("Mul", {o.gamma_scalar ? init(tensor<float>({}, {1.5f})) : init(tensor<float>({o.n}, gv)), y}, "scaled").outputs[0];
  if (o.beta) y = node("Add", {y, init(tensor<float>({o.n}, bv))}, "y").outputs[0];
  g.outputs.push_back(y);
  if (o.d_is_output) g.outputs.push_back(d);
  return r;
}

Tensor run(const ir::Model& m, const Tensor& x, bool fuse, int threads) {
  backends::ExecOptions o;
  o.threads = threads;
  o.fuse = fuse;
  backends::Executor ex(m, o);
  Tensor out = ex.run({{"x", backends::RValue::of(x)}}).at(0).tensor;
  backends::ThreadPool::configure(0);
  return out;
}

// Rows with offsets and scales far from 0 and 1, so the mean and variance matter.
Tensor rows_input(const std::vector<int64_t>& dims, unsigned seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  auto v = random_values(n, seed);
  const int64_t N = dims.back();
  for (int64_t i = 0; i < n; ++i) {
    const auto r = static_cast<float>(i / N);
    v[static_cast<size_t>(i)] = v[static_cast<size_t>(i)] * (0.5f + r) + 3.f * r - 4.f;
  }
  return tensor<float>(dims, v);
}

}  // namespace

TEST_CASE("LayerNorm fusion: the decomposed pattern with scale and bias fuses into one kernel") {
  for (int opset : {13, 18}) {
    CAPTURE(opset);
    LnOptions o;
    o.opset = opset;
    o.n = 96;
    auto ln = layer_norm_model(o);
    auto fk = backends::cpu::fuse_layer_norm(*ln.first);
    REQUIRE(fk.has_value());
    CHECK(fk->absorbed.size() == 8);  // Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add
    CHECK(fk->output == ln.m->graph->outputs[0]);
  }
}

TEST_CASE("LayerNorm fusion: outputs match the unfused nodes and an f64 reference") {
  for (bool gamma : {true, false})
    for (bool gamma_scalar : {false, true})
      for (const auto& dims : std::vector<std::vector<int64_t>>{{4, 7, 96}, {1, 1, 128}, {3, 2, 5}}) {
        if (!gamma && gamma_scalar) continue;
        CAPTURE(gamma);
        CAPTURE(gamma_scalar);
        CAPTURE(dims.back());
        LnOptions o;
        o.n = dims.back();
        o.gamma = gamma;
        o.gamma_scalar = gamma_scalar;
        o.beta = gamma;
        auto ln = layer_norm_model(o);
        const Tensor x = rows_input(dims, 11);
        const Tensor plain = run(*ln.m, x, false, 1);
        const Tensor fused = run(*ln.m, x, true, 1);
        const Tensor fused2 = run(*ln.m, x, true, 2);
        REQUIRE(fused.dims() == plain.dims());
        CHECK(std::memcmp(fused.raw(), fused2.raw(), fused.nbytes()) == 0);
        const auto xs = x.data<float>();
        const auto f = fused.data<float>(), p = plain.data<float>();
        const int64_t N = dims.back();
        double worst_plain = 0, worst_ref = 0;
        for (int64_t r = 0; r * N < x.numel(); ++r) {
          double mean = 0, var = 0;
          for (int64_t j = 0; j < N; ++j) mean += xs[static_cast<size_t>(r * N + j)];
          mean /= static_cast<double>(N);
          for (int64_t j = 0; j < N; ++j) var += std::pow(xs[static_cast<size_t>(r * N + j)] - mean, 2);
          var /= static_cast<double>(N);
          for (int64_t j = 0; j < N; ++j) {
            const size_t i = static_cast<size_t>(r * N + j);
            double ref = (xs[i] - mean) / std::sqrt(var + 1e-5);
            if (gamma) ref = ref * (gamma_scalar ? 1.5 : 0.5 + 0.01 * static_cast<double>(j)) + (-0.2 + 0.003 * static_cast<double>(j));
            worst_plain = std::max(worst_plain, std::abs(static_cast<double>(f[i]) - p[i]) / std::max(1.0, std::abs(ref)));
            worst_ref = std::max(worst_ref, std::abs(static_cast<double>(f[i]) - ref) / std::max(1.0, std::abs(ref)));
          }
        }
        CHECK(worst_plain < 5e-7);  // a few ulp: only the square root is rounded differently
        CHECK(worst_ref < 2e-6);
      }
}

TEST_CASE("LayerNorm fusion: left alone for other axes, shared intermediates and other exponents") {
  LnOptions o;
  o.n = 8;
  o.axes = {1};  // rank 3: not the last axis
  CHECK_FALSE(backends::cpu::fuse_layer_norm(*layer_norm_model(o).first).has_value());
  o.axes = {2};  // the last axis of a rank-3 input: fuses
  CHECK(backends::cpu::fuse_layer_norm(*layer_norm_model(o).first).has_value());
  o.rank = 0;  // rank unknown: only -1 is surely the last axis
  CHECK_FALSE(backends::cpu::fuse_layer_norm(*layer_norm_model(o).first).has_value());
  o = LnOptions{};
  o.n = 8;
  o.d_is_output = true;
  CHECK_FALSE(backends::cpu::fuse_layer_norm(*layer_norm_model(o).first).has_value());
  o.d_is_output = false;
  o.exponent = 3.f;
  CHECK_FALSE(backends::cpu::fuse_layer_norm(*layer_norm_model(o).first).has_value());
  // Unfused, the model still runs and gives the node-by-node result.
  auto ln = layer_norm_model(o);
  const Tensor x = rows_input({2, 8}, 3);
  const Tensor a = run(*ln.m, x, true, 1), b = run(*ln.m, x, false, 1);
  CHECK(std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}
