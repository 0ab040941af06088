// Channels-in-lanes depthwise convs (f32 and QDQ u8) split their output rows into bands when
// there are fewer channel groups than threads (depthwise_row_bands): the outputs are the same
// bytes with one thread as with several, for stride 1 and 2, 3x3 and 5x5.
#include <doctest/doctest.h>

#include <cstring>

#include "backends/cpu/kernels/depthwise_c16_rows.h"
#include "backends/executor.h"
#include "support/graph_builder.h"

using namespace mcc;
using ir::DType;
using ir::Tensor;

namespace {

// x -> [DequantizeLinear] -> depthwise Conv (C channels, k x k, stride s, pad k / 2) -> SiLU ->
// [QuantizeLinear] -> y.
ir::Model dw_model(bool qdq, int64_t C, int64_t H, int64_t W, int64_t k, int64_t s) {
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value* x = &test::add_input(g, "x", {1, C, H, W}, qdq ? DType::U8 : DType::F32);
  ir::Value* w = nullptr;
  if (qdq) {
    ir::Value& xs = g.add_initializer("xs", Tensor::scalar<float>(0.02f));
    ir::Value& xz = g.add_initializer("xz", Tensor::scalar<uint8_t>(118));
    x = test::add_node(g, "DequantizeLinear", "dq_x", {x, &xs, &xz}, {"xd"}, 13).outputs[0];
    ir::Value& wq = g.add_initializer("wq", test::random_int_tensor<int8_t>({C, 1, k, k}, -127, 127, 4));
    ir::Value& ws = g.add_initializer("ws", Tensor::scalar<float>(0.01f));
    ir::Value& wz = g.add_initializer("wz", Tensor::scalar<int8_t>(0));
    w = test::add_node(g, "DequantizeLinear", "dq_w", {&wq, &ws, &wz}, {"wd"}, 13).outputs[0];
  } else {
    w = &test::add_random_init(g, "w", {C, 1, k, k}, 4);
  }
  ir::Value& b = test::add_random_init(g, "b", {C}, 5);
  ir::Value* v = test::add_node(g, "Conv", "conv", {x, w, &b}, {"c"}, 11,
                                {test::attr_i("group", C), test::attr_ints("kernel_shape", {k, k}),
                                 test::attr_ints("strides", {s, s}), test::attr_ints("pads", {k / 2, k / 2, k / 2, k / 2})})
                     .outputs[0];
  ir::Value* sg = test::add_node(g, "Sigmoid", "sig", {v}, {"sg"}, 13).outputs[0];
  v = test::add_node(g, "Mul", "mul", {v, sg}, {"a"}, 13).outputs[0];
  if (qdq) {
    ir::Value& ys = g.add_initializer("ys", Tensor::scalar<float>(0.03f));
    ir::Value& yz = g.add_initializer("yz", Tensor::scalar<uint8_t>(10));
    v = test::add_node(g, "QuantizeLinear", "q_y", {v, &ys, &yz}, {"y"}, 13).outputs[0];
  }
  test::mark_output(g, *v, qdq ? DType::U8 : DType::F32);
  return m;
}

Tensor run(const ir::Model& m, const Tensor& x, int threads) {
  backends::ExecOptions o;
  o.threads = threads;
  backends::Executor ex(m, o);
  return ex.run({{"x", backends::RValue::of(x)}}).at(0).tensor;
}

}  // namespace

TEST_CASE("depthwise row bands: only when the channel groups leave threads idle, at least 4 rows each") {
  CHECK(backends::cpu::depthwise_row_bands(1, 104, 1) == 1);   // one thread: no bands
  CHECK(backends::cpu::depthwise_row_bands(1, 104, 2) == 4);   // two items per thread
  CHECK(backends::cpu::depthwise_row_bands(2, 52, 2) == 2);
  CHECK(backends::cpu::depthwise_row_bands(4, 52, 2) == 1);    // the groups suffice
  CHECK(backends::cpu::depthwise_row_bands(1, 9, 4) == 2);     // 9 rows: bands of at least 4
  CHECK(backends::cpu::depthwise_row_bands(1, 3, 4) == 1);
}

TEST_CASE("depthwise row bands: f32 and QDQ depthwise convs give the same bytes on 1 and 3 threads") {
  struct Geo {
    int64_t C, H, W, k, s;
  };
  for (const Geo& geo : {Geo{16, 23, 21, 3, 1}, Geo{16, 24, 19, 3, 2}, Geo{20, 22, 17, 5, 1}, Geo{16, 26, 26, 5, 2}}) {
    for (bool qdq : {false, true}) {
      CAPTURE(geo.k);
      CAPTURE(geo.s);
      CAPTURE(qdq);
      const ir::Model m = dw_model(qdq, geo.C, geo.H, geo.W, geo.k, geo.s);
      const Tensor x = qdq ? test::random_int_tensor<uint8_t>({1, geo.C, geo.H, geo.W}, 0, 255, 7)
                           : test::random_tensor({1, geo.C, geo.H, geo.W}, 7, -2.f, 2.f);
      const Tensor one = run(m, x, 1), three = run(m, x, 3);
      REQUIRE(one.dims() == three.dims());
      REQUIRE(one.nbytes() == three.nbytes());
      CHECK(std::memcmp(one.raw(), three.raw(), one.nbytes()) == 0);
    }
  }
}
