// The cuda backend's Conv/Gemm + activation epilogue fusion: which chains Backend::fuse matches
// (Relu, Sigmoid, SiLU as Sigmoid->Mul, Clip with constant bounds, LeakyRelu, HardSigmoid,
// HardSwish; not a value with other readers or one that is a graph output), and small graphs run
// through the Executor on the cuda backend against the cpu executor, with the absorbed nodes not
// run on their own.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>

#include "backends/cuda/cuda_test_util.h"
#include "support/graph_builder.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_test;

namespace {

ir::Attribute int_attr(const std::string& name, int64_t v) { return {name, ir::AttrKind::Int, v, "", "", ""}; }
ir::Attribute float_attr(const std::string& name, float v) { return {name, ir::AttrKind::Float, v, "", "", ""}; }

// Appends the activation `act` reading v and returns its result value and the nodes it adds.
using ActBuilder = std::function<ir::Value*(ir::Graph&, ir::Value*, std::vector<const ir::Node*>&)>;

ir::Value* one_node(ir::Graph& g, ir::Value* v, std::vector<const ir::Node*>& nodes, const std::string& op,
                    int opset, std::vector<ir::Attribute> attrs = {}, std::vector<ir::Value*> extra = {}) {
  std::vector<ir::Value*> ins{v};
  ins.insert(ins.end(), extra.begin(), extra.end());
  ir::Node& n = add_node(g, op, op + "_node", ins, {op + "_out"}, opset, std::move(attrs));
  nodes.push_back(&n);
  return n.outputs[0];
}

ActBuilder simple(const std::string& op, std::vector<ir::Attribute> attrs = {}) {
  return [op, attrs](ir::Graph& g, ir::Value* v, std::vector<const ir::Node*>& nodes) {
    return one_node(g, v, nodes, op, 14, attrs);
  };
}

ActBuilder silu() {
  return [](ir::Graph& g, ir::Value* v, std::vector<const ir::Node*>& nodes) {
    ir::Node& s = add_node(g, "Sigmoid", "sig", {v}, {"sig_out"}, 13);
    ir::Node& m = add_node(g, "Mul", "mul", {v, s.outputs[0]}, {"mul_out"}, 14);
    nodes.push_back(&s);
    nodes.push_back(&m);
    return m.outputs[0];
  };
}

ActBuilder clip(ir::DType dt, float lo, float hi) {
  return [=](ir::Graph& g, ir::Value* v, std::vector<const ir::Node*>& nodes) {
    auto scalar_of = [dt](float x) {
      return dt == ir::DType::F16 ? tensor_of<f16>({}, {x}) : tensor<float>({}, std::vector<float>{x});
    };
    ir::Value& l = g.add_initializer("lo", scalar_of(lo));
    ir::Value& h = g.add_initializer("hi", scalar_of(hi));
    return one_node(g, v, nodes, "Clip", 13, {}, {&l, &h});
  };
}

struct FusionGraph {
  ir::Model model = empty_model(14);
  const ir::Node* producer = nullptr;
  std::vector<const ir::Node*> act_nodes;
};

// X -> Conv(W, B, pads 1) -> act -> output (or Gemm(X, W^T, C) -> act when gemm).
FusionGraph build(ir::DType dt, const ActBuilder& act, bool gemm = false) {
  FusionGraph f;
  ir::Graph& g = *f.model.graph;
  ir::Value* y;
  if (gemm) {
    ir::Value& x = add_input(g, "x", {5, 7}, dt);
    ir::Value& w = g.add_initializer("w", random_of(dt, {9, 7}, 5));
    ir::Value& c = g.add_initializer("c", random_of(dt, {9}, 6));
    ir::Node& n = add_node(g, "Gemm", "gemm", {&x, &w, &c}, {"y"}, 13, {int_attr("transB", 1)});
    f.producer = &n;
    y = n.outputs[0];
  } else {
    ir::Value& x = add_input(g, "x", {2, 3, 7, 9}, dt);
    ir::Value& w = g.add_initializer("w", random_of(dt, {4, 3, 3, 3}, 5));
    ir::Value& b = g.add_initializer("b", random_of(dt, {4}, 6));
    ir::Node& n = add_node(g, "Conv", "conv", {&x, &w, &b}, {"y"}, 11, {attr_ints("pads", {1, 1, 1, 1})});
    f.producer = &n;
    y = n.outputs[0];
  }
  ir::Value* out = act(g, y, f.act_nodes);
  mark_output(g, *out, dt);
  return f;
}

// Fuse matches the whole chain; the graph runs on cuda like on the cpu; absorbed nodes that the
// cuda backend was given do not run on their own.
void check_fused(ir::DType dt, const ActBuilder& act, bool gemm = false) {
  FusionGraph f = build(dt, act, gemm);
  auto fk = cuda().fuse(*f.producer);
  REQUIRE(fk.has_value());
  CHECK(fk->absorbed == f.act_nodes);
  CHECK(fk->output == f.act_nodes.back()->outputs[0]);

  std::vector<std::pair<std::string, backends::RValue>> feeds = {
      {"x", backends::RValue::of(random_of(dt, gemm ? std::vector<int64_t>{5, 7} : std::vector<int64_t>{2, 3, 7, 9}, 9))}};
  backends::Executor ref(f.model, backends::ExecOptions{2});
  const auto want = ref.run(feeds);
  backends::ExecOptions opts{2};
  opts.backend = &cuda();
  opts.profile = true;
  backends::Executor ex(f.model, opts);
  const auto got = ex.run(feeds);
  check_same_outputs(want, got, "cuda", f.producer->op_type + " + activation");
  CHECK(ex.placement_of(*f.producer) == &cuda());
  const auto& times = ex.node_times();
  for (const ir::Node* a : f.act_nodes) {
    INFO("absorbed node " << a->op_type);
    const bool ran = std::any_of(times.begin(), times.end(), [&](const auto& t) { return t.node == a; });
    if (ex.placement_of(*a) == &cuda()) CHECK_FALSE(ran);
    else MESSAGE(a->op_type << " is not on the cuda backend, so it runs unfused");
  }
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda fusion: Conv + activation chains, f32") {
    check_fused(ir::DType::F32, simple("Relu"));
    check_fused(ir::DType::F32, silu());
    check_fused(ir::DType::F32, clip(ir::DType::F32, -0.25f, 0.5f));
    check_fused(ir::DType::F32, simple("Sigmoid"));
    check_fused(ir::DType::F32, simple("LeakyRelu", {float_attr("alpha", 0.3f)}));
    check_fused(ir::DType::F32, simple("HardSigmoid", {float_attr("alpha", 0.4f), float_attr("beta", 0.45f)}));
    check_fused(ir::DType::F32, simple("HardSwish"));
  }

  TEST_CASE("cuda fusion: Conv + activation, f16; Gemm + activation") {
    check_fused(ir::DType::F16, simple("Relu"));
    check_fused(ir::DType::F16, silu());
    check_fused(ir::DType::F16, clip(ir::DType::F16, 0.f, 0.75f));
    check_fused(ir::DType::F32, simple("Relu"), true);
    check_fused(ir::DType::F32, silu(), true);
    check_fused(ir::DType::F16, clip(ir::DType::F16, -0.5f, 0.5f), true);
  }

  TEST_CASE("cuda fusion: nothing fused when the conv output has other readers") {
    FusionGraph f = build(ir::DType::F32, simple("Relu"));
    mark_output(*f.model.graph, *f.producer->outputs[0]);  // the conv output is a graph output too
    CHECK_FALSE(cuda().fuse(*f.producer).has_value());

    FusionGraph other = build(ir::DType::F32, simple("Tanh"));
    CHECK_FALSE(cuda().fuse(*other.producer).has_value());

    // Clip whose bound is a graph input (not a constant).
    FusionGraph c = build(ir::DType::F32, [](ir::Graph& g, ir::Value* v, std::vector<const ir::Node*>& nodes) {
      ir::Value& lo = add_input(g, "lo", {});
      return one_node(g, v, nodes, "Clip", 13, {}, {&lo});
    });
    CHECK_FALSE(cuda().fuse(*c.producer).has_value());
  }
}
