// The QDQ conv fusion with a residual Add (backends/cpu/kernels/qdq_residual_add.h): x (u8) ->
// DequantizeLinear -> Conv -> SiLU -> Add(DequantizeLinear(r)) -> [QuantizeLinear] runs as one
// kernel reading r directly, within one output unit of the nodes run one by one; an r that
// broadcasts gives the Add's broadcast result; an r made after the group starts is left to the
// unfused nodes; and the residual DequantizeLinear, left without readers, does not run.
#include <doctest/doctest.h>

#include <cmath>

#include "backends/cpu/kernels/qdq_conv_fusion.h"
#include "backends/executor.h"
#include "support/graph_builder.h"

using namespace mcc;
using ir::DType;
using ir::Tensor;

namespace {

struct RCase {
  const char* name;
  int64_t C, M, K, G, H, W;
  std::vector<int64_t> r_dims;  // empty: the conv output's dims
  bool quant_out = true;
  bool s8 = false;              // r and y are s8 (else u8)
  bool r_made_late = false;     // r is quantized from an f32 input after the conv in node order
};

struct Built {
  ir::Model model;
  const ir::Node* residual_dq = nullptr;
  std::vector<std::pair<std::string, backends::RValue>> feeds;
};

Built build(const RCase& c, unsigned seed) {
  uint32_t next_seed = seed;  // one seed per random tensor
  Built b{test::empty_model(13), nullptr, {}};
  ir::Graph& g = *b.model.graph;
  const std::vector<int64_t> out_dims = {1, c.M, c.H, c.W};
  const std::vector<int64_t> r_dims = c.r_dims.empty() ? out_dims : c.r_dims;
  ir::Value& x = test::add_input(g, "x", {1, c.C, c.H, c.W}, DType::U8);
  b.feeds.push_back({"x", backends::RValue::of(test::random_int_tensor<uint8_t>({1, c.C, c.H, c.W}, 0, 255, next_seed++))});
  ir::Value& xs = g.add_initializer("xs", Tensor::scalar<float>(0.02f));
  ir::Value& xz = g.add_initializer("xz", Tensor::scalar<uint8_t>(120));
  ir::Node& dqx = test::add_node(g, "DequantizeLinear", "dq_x", {&x, &xs, &xz}, {"xd"}, 13);
  ir::Value& wq = g.add_initializer("wq", test::random_int_tensor<int8_t>({c.M, c.C / c.G, c.K, c.K}, -127, 127, next_seed++));
  ir::Value& ws = g.add_initializer("ws", Tensor::scalar<float>(0.004f));
  ir::Value& wz = g.add_initializer("wz", Tensor::scalar<int8_t>(0));
  ir::Node& dqw = test::add_node(g, "DequantizeLinear", "dq_w", {&wq, &ws, &wz}, {"wd"}, 13);
  const int64_t pad = c.K / 2;
  ir::Node& conv = test::add_node(g, "Conv", "conv", {dqx.outputs[0], dqw.outputs[0]}, {"conv_out"}, 11,
                                  {test::attr_i("group", c.G), test::attr_ints("kernel_shape", {c.K, c.K}),
                                   test::attr_ints("pads", {pad, pad, pad, pad})});
  ir::Value* s = test::add_node(g, "Sigmoid", "sig", {conv.outputs[0]}, {"sig"}, 13).outputs[0];
  ir::Value* a = test::add_node(g, "Mul", "mul", {conv.outputs[0], s}, {"act"}, 13).outputs[0];
  ir::Value& rs = g.add_initializer("rs", Tensor::scalar<float>(0.03f));
  ir::Value& rz = c.s8 ? g.add_initializer("rz", Tensor::scalar<int8_t>(-3)) : g.add_initializer("rz", Tensor::scalar<uint8_t>(110));
  ir::Value* r = nullptr;
  if (c.r_made_late) {
    ir::Value& rf = test::add_input(g, "rf", r_dims, DType::F32);
    b.feeds.push_back({"rf", backends::RValue::of(test::random_tensor(r_dims, seed + 1, -3.f, 3.f))});
    r = test::add_node(g, "QuantizeLinear", "q_r", {&rf, &rs, &rz}, {"r"}, 13).outputs[0];
  } else {
    r = &test::add_input(g, "r", r_dims, c.s8 ? DType::I8 : DType::U8);
    b.feeds.push_back({"r", backends::RValue::of(c.s8 ? test::random_int_tensor<int8_t>(r_dims, -128, 127, next_seed++)
                                                      : test::random_int_tensor<uint8_t>(r_dims, 0, 255, next_seed++))});
  }
  ir::Node& dqr = test::add_node(g, "DequantizeLinear", "dq_r", {r, &rs, &rz}, {"rd"}, 13);
  b.residual_dq = &dqr;
  ir::Value* v = test::add_node(g, "Add", "add", {a, dqr.outputs[0]}, {"sum"}, 13).outputs[0];
  if (c.quant_out) {
    ir::Value& ys = g.add_initializer("ys", Tensor::scalar<float>(0.05f));
    ir::Value& yz = c.s8 ? g.add_initializer("yz", Tensor::scalar<int8_t>(-20)) : g.add_initializer("yz", Tensor::scalar<uint8_t>(40));
    v = test::add_node(g, "QuantizeLinear", "q_y", {v, &ys, &yz}, {"y"}, 13).outputs[0];
  }
  test::mark_output(g, *v, !c.quant_out ? DType::F32 : c.s8 ? DType::I8 : DType::U8);
  return b;
}

struct Run {
  Tensor y;
  bool residual_dq_ran = false;
};

Run run(const Built& b, bool fuse) {
  backends::ExecOptions o;
  o.threads = 1;
  o.fuse = fuse;
  o.profile = true;
  backends::Executor ex(b.model, o);
  Run r{ex.run(b.feeds).at(0).tensor};
  for (const auto& t : ex.node_times()) r.residual_dq_ran = r.residual_dq_ran || t.node == b.residual_dq;
  return r;
}

const RCase kCases[] = {
    {"1x1, u8 output", 16, 24, 1, 1, 9, 13},
    {"1x1, 52x50 map in column chunks, u8 output", 8, 12, 1, 1, 52, 50},
    {"3x3, f32 output", 5, 7, 3, 1, 8, 9, {}, false},
    {"depthwise 3x3, u8 output", 20, 20, 3, 20, 11, 10},
    {"1x1, s8 residual and output", 12, 6, 1, 1, 7, 9, {}, true, true},
    {"1x1, r broadcast over the map", 9, 10, 1, 1, 6, 7, {1, 10, 1, 1}},
    {"1x1, r larger than the conv output (broadcast up)", 4, 6, 1, 1, 1, 5, {1, 6, 3, 5}},
};

}  // namespace

TEST_CASE("qdq residual fusion: conv + SiLU + Add(DequantizeLinear(r)) [+ Q] as one kernel matches the nodes") {
  for (const RCase& c : kCases) {
    CAPTURE(c.name);
    const Built b = build(c, 5);
    // The fusion covers the Add (and the QuantizeLinear) and reads x and r.
    const auto fk = backends::cpu::fuse_qdq_conv(*b.model.graph->nodes()[0]);
    REQUIRE(fk.has_value());
    CHECK(fk->output == b.model.graph->outputs[0]);
    REQUIRE(fk->inputs.size() == 2);
    CHECK(fk->inputs[1] == b.residual_dq->inputs[0]);
    const Run want = run(b, false), got = run(b, true);
    REQUIRE(got.y.dims() == want.y.dims());
    REQUIRE(got.y.dtype() == want.y.dtype());
    const auto [diff, count] = test::element_diff(got.y, want.y);
    if (c.quant_out) {
      CHECK(diff <= 1.0);
      CHECK(count * 50 <= want.y.numel());  // off by one only near a rounding tie
    } else {
      CHECK(diff < 1e-4);
    }
    CHECK(want.residual_dq_ran);
    CHECK_FALSE(got.residual_dq_ran);  // its only reader became the fused kernel, which reads r
  }
}

TEST_CASE("qdq residual fusion: an r made after the group's first node leaves the nodes unfused") {
  const RCase c{"r quantized after the conv", 6, 8, 1, 1, 5, 6, {}, true, false, true};
  const Built b = build(c, 9);
  const auto fk = backends::cpu::fuse_qdq_conv(*b.model.graph->nodes()[0]);
  REQUIRE(fk.has_value());  // the match alone would read r before it exists
  const Run want = run(b, false), got = run(b, true);
  REQUIRE(got.y.dims() == want.y.dims());
  REQUIRE(got.y.dtype() == want.y.dtype());
  CHECK(test::element_diff(got.y, want.y).max <= 1.0);  // the f32 conv fusion may round its SiLU differently
  CHECK(got.residual_dq_ran);                   // the residual went through its own nodes
}
