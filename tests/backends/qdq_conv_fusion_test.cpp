// QDQ conv groups on the cpu backend run as integer kernels (qdq_conv_fusion): the fused result
// matches the node-by-node QDQ reference within one unit of the u8 output (f32 outputs within f32
// rounding) for 1x1, im2col, grouped and depthwise convs, odd channel counts, padding, stride 2,
// per-channel and per-tensor weight scales, per-channel x scales (depthwise), f32 and int32
// biases, with and without an activation and output QuantizeLinear, the x DequantizeLinear read
// by a second node, and with the SIMD paths off (scalar fallback). One group is also checked
// against ONNX Runtime. The u8 x s8 GEMM and the row codecs are checked against plain loops.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "backends/cpu/kernels/int8_gemm.h"
#include "backends/cpu/kernels/qdq_conv_fusion.h"
#include "backends/executor.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/graph_builder.h"
#include "support/ort.h"
#include "support/paths.h"

using namespace mcc;
using ir::DType;
using ir::Tensor;

namespace {

struct QCase {
  const char* name;
  int64_t C, M, K, G, stride, pad;
  const char* act;         // "none", "relu", "silu", "clip", "hardswish"
  bool per_channel_w = true;
  bool int_bias = true;     // DequantizeLinear of an int32 constant (else an f32 constant)
  bool quant_out = true;    // QuantizeLinear after the activation
  bool two_readers = false; // the dequantized x is also read by a Relu (fusion starts at the Conv)
  bool per_channel_x = false;
  int64_t H = 9, W = 11;
  float y_scale = 0.03f;    // output QuantizeLinear scale (tiny: most values saturate)
  bool s8_out = false;      // s8 output zero point (else u8)
  float w_scale = 0.01f;    // weight scales drawn from [w_scale / 5, w_scale]
};

template <class T>
std::vector<T> random_ints(size_t n, int lo, int hi, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

std::vector<float> random_floats(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Built {
  ir::Model model;
  const ir::Node* start = nullptr;  // where the fusion should start
};

// x (u8) -> DequantizeLinear -> Conv(DequantizeLinear(w s8), bias) -> act -> [QuantizeLinear] -> y
Built build(const QCase& c, unsigned seed) {
  std::mt19937 rng(seed);
  Built b{test::empty_model(13), nullptr};
  ir::Graph& g = *b.model.graph;
  ir::Value& x = test::add_input(g, "x", {1, c.C, c.H, c.W}, DType::U8);
  const size_t nx = c.per_channel_x ? static_cast<size_t>(c.C) : 1;
  const std::vector<int64_t> xdims = c.per_channel_x ? std::vector<int64_t>{c.C} : std::vector<int64_t>{};
  const auto xs_v = random_floats(nx, 0.01f, 0.03f, rng);
  ir::Value& xs = g.add_initializer("xs", Tensor::from_vector<float>(xdims, xs_v));
  ir::Value& xz = g.add_initializer("xz", Tensor::from_vector<uint8_t>(xdims, random_ints<uint8_t>(nx, 100, 140, rng)));
  ir::Node& dqx = test::add_node(g, "DequantizeLinear", "dq_x", {&x, &xs, &xz}, {"xd"}, 13, {test::attr_i("axis", 1)});
  const int64_t cg = c.C / c.G;
  const size_t nw = static_cast<size_t>(c.M * cg * c.K * c.K);
  ir::Value& wq = g.add_initializer("wq", Tensor::from_vector<int8_t>({c.M, cg, c.K, c.K}, random_ints<int8_t>(nw, -127, 127, rng)));
  const size_t ns = c.per_channel_w ? static_cast<size_t>(c.M) : 1;
  const std::vector<int64_t> sdims = c.per_channel_w ? std::vector<int64_t>{c.M} : std::vector<int64_t>{};
  const auto ws_v = random_floats(ns, c.w_scale / 5.f, c.w_scale, rng);
  ir::Value& ws = g.add_initializer("ws", Tensor::from_vector<float>(sdims, ws_v));
  ir::Value& wz = g.add_initializer("wz", Tensor::from_vector<int8_t>(sdims, std::vector<int8_t>(ns, 0)));
  ir::Node& dqw = test::add_node(g, "DequantizeLinear", "dq_w", {&wq, &ws, &wz}, {"wd"}, 13, {test::attr_i("axis", 0)});
  ir::Value* bias = nullptr;
  if (c.int_bias) {
    std::vector<float> bs(static_cast<size_t>(c.M));
    for (size_t i = 0; i < bs.size(); ++i) bs[i] = xs_v[0] * ws_v[c.per_channel_w ? i : 0];
    ir::Value& bq = g.add_initializer("bq", Tensor::from_vector<int32_t>({c.M}, random_ints<int32_t>(static_cast<size_t>(c.M), -3000, 3000, rng)));
    ir::Value& bsv = g.add_initializer("bs", Tensor::from_vector<float>({c.M}, bs));
    ir::Value& bz = g.add_initializer("bz", Tensor::from_vector<int32_t>({c.M}, std::vector<int32_t>(static_cast<size_t>(c.M), 0)));
    bias = test::add_node(g, "DequantizeLinear", "dq_b", {&bq, &bsv, &bz}, {"bd"}, 13, {test::attr_i("axis", 0)}).outputs[0];
  } else {
    bias = &g.add_initializer("bf", Tensor::from_vector<float>({c.M}, random_floats(static_cast<size_t>(c.M), -0.5f, 0.5f, rng)));
  }
  std::vector<ir::Attribute> ca = {test::attr_i("group", c.G), test::attr_ints("kernel_shape", {c.K, c.K}),
                                   test::attr_ints("strides", {c.stride, c.stride}),
                                   test::attr_ints("pads", {c.pad, c.pad, c.pad, c.pad})};
  ir::Node& conv = test::add_node(g, "Conv", "conv", {dqx.outputs[0], dqw.outputs[0], bias}, {"conv_out"}, 11, ca);
  ir::Value* v = conv.outputs[0];
  const std::string act = c.act;
  if (act == "relu") {
    v = test::add_node(g, "Relu", "relu", {v}, {"act"}, 13).outputs[0];
  } else if (act == "silu") {
    ir::Value* s = test::add_node(g, "Sigmoid", "sig", {v}, {"sig"}, 13).outputs[0];
    v = test::add_node(g, "Mul", "mul", {v, s}, {"act"}, 13).outputs[0];
  } else if (act == "clip") {
    ir::Value& lo = g.add_initializer("lo", Tensor::scalar<float>(0.f));
    ir::Value& hi = g.add_initializer("hi", Tensor::scalar<float>(3.f));
    v = test::add_node(g, "Clip", "clip", {v, &lo, &hi}, {"act"}, 13).outputs[0];
  } else if (act == "hardswish") {
    v = test::add_node(g, "HardSwish", "hswish", {v}, {"act"}, 14).outputs[0];
  }
  if (c.quant_out) {
    ir::Value& ys = g.add_initializer("ys", Tensor::scalar<float>(c.y_scale));
    ir::Value& yz = c.s8_out ? g.add_initializer("yz", Tensor::scalar<int8_t>(act == "none" ? 0 : -100))
                             : g.add_initializer("yz", Tensor::scalar<uint8_t>(act == "none" ? 128 : 20));
    v = test::add_node(g, "QuantizeLinear", "q_y", {v, &ys, &yz}, {"y"}, 13).outputs[0];
  }
  ir::Value* yv = v;
  yv->has_type = true;
  yv->dtype = !c.quant_out ? DType::F32 : c.s8_out ? DType::I8 : DType::U8;
  g.outputs.push_back(yv);
  if (c.two_readers) {
    ir::Value* r = test::add_node(g, "Relu", "other_reader", {dqx.outputs[0]}, {"r"}, 13).outputs[0];
    r->has_type = true;
    r->dtype = DType::F32;
    g.outputs.push_back(r);
  }
  b.start = c.two_readers ? &conv : &dqx;
  return b;
}

Tensor random_x(const QCase& c, unsigned seed) {
  std::mt19937 rng(seed);
  return Tensor::from_vector<uint8_t>({1, c.C, c.H, c.W}, random_ints<uint8_t>(static_cast<size_t>(c.C * c.H * c.W), 0, 255, rng));
}

Tensor run(const ir::Model& m, const Tensor& x, bool fuse) {
  backends::ExecOptions o;
  o.threads = 1;
  o.fuse = fuse;
  backends::Executor ex(m, o);
  return ex.run({{"x", backends::RValue::of(x)}}).at(0).tensor;
}

// Largest difference in units of the output (u8) or relative to the output's range (f32), and
// how many elements differ.
std::pair<double, int64_t> compare(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dims() == b.dims());
  REQUIRE(a.dtype() == b.dtype());
  if (a.dtype() != DType::F32) {
    const test::ElementDiff e = test::element_diff(a, b);
    return {e.max, e.count};
  }
  double range = 0;
  for (float v : b.data<float>()) range = std::max(range, static_cast<double>(std::abs(v)));
  const test::ElementDiff e = test::element_diff(a, b, 1e-5 * (1.0 + range));
  return {e.max / (1.0 + range), e.count};
}

const QCase kCases[] = {
    {"1x1", 13, 7, 1, 1, 1, 0, "silu"},
    {"3x3 pad 1", 5, 9, 3, 1, 1, 1, "relu"},
    {"3x3 stride 2 pad 1", 6, 17, 3, 1, 2, 1, "silu"},
    {"5x5 stride 2 pad 2, per-tensor w", 3, 4, 5, 1, 2, 2, "clip", false},
    {"grouped", 6, 9, 3, 3, 1, 1, "hardswish"},
    {"depthwise 3x3", 7, 7, 3, 7, 1, 1, "silu"},
    {"depthwise 3x3 stride 2", 12, 12, 3, 12, 2, 1, "silu", true, false},
    {"depthwise 5x5 stride 2, per-channel x", 5, 5, 5, 5, 2, 2, "relu", true, false, true, false, true},
    {"depthwise stride 2 even pad", 4, 4, 3, 4, 2, 0, "none", true, false, true, false, false, 10, 40},
    {"no activation", 8, 5, 3, 1, 1, 1, "none"},
    {"f32 output", 6, 10, 3, 1, 2, 1, "silu", true, true, false},
    {"f32 bias", 9, 6, 1, 1, 1, 0, "relu", true, false},
    {"x read by a second node", 10, 12, 3, 1, 1, 1, "silu", true, true, true, true},
    {"depthwise, x read by a second node", 6, 6, 3, 6, 2, 1, "silu", true, false, true, true},
    {"wide 1x1", 40, 33, 1, 1, 1, 0, "silu", true, true, true, false, false, 13, 29},
    // 16-channel groups with a channel tail (the channels-in-lanes depthwise kernel)
    {"depthwise 3x3, 37 channels, 7x7", 37, 37, 3, 37, 1, 1, "hardswish", true, true, true, false, false, 7, 7},
    {"depthwise 5x5 stride 2, 32 channels, f32 output", 32, 32, 5, 32, 2, 2, "silu", true, false, false, false, true, 14, 14},
    {"depthwise 3x3 stride 2, 20 channels, x read twice", 20, 20, 3, 20, 2, 1, "clip", true, true, true, true, false, 15, 9},
    // Maps of 2048 positions or more run in column chunks (partial rows at the chunk edges).
    {"3x3 pad 1, 48x50 map in column chunks", 5, 9, 3, 1, 1, 1, "silu", true, true, true, false, false, 48, 50},
    {"3x3 stride 2 pad 1, 100x90 map in column chunks", 3, 20, 3, 1, 2, 1, "relu", true, false, true, false, false, 100, 90},
    {"1x1, 50x47 map in column chunks, f32 output", 13, 6, 1, 1, 1, 0, "silu", true, true, false, false, false, 50, 47},
    {"grouped 3x3, 45x47 map in column chunks", 6, 8, 3, 2, 1, 1, "hardswish", true, true, true, false, false, 45, 47},
    {"5x5 pad 2, 46x50 map in column chunks", 3, 6, 5, 1, 1, 2, "silu", true, true, true, false, false, 46, 50},
    {"5x5 pad 2, 4x6 map (taps reach past the plane)", 2, 5, 5, 1, 1, 2, "relu", true, true, true, false, false, 4, 6},
    // A tiny output scale: values leave the s32 range unless clamped, then saturate.
    {"3x3, tiny output scale", 5, 9, 3, 1, 1, 1, "none", true, true, true, false, false, 9, 11, 1e-9f},
    {"depthwise 3x3, tiny output scale", 16, 16, 3, 16, 1, 1, "silu", true, true, true, false, false, 9, 11, 1e-9f},
    {"1x1, s8 output", 13, 7, 1, 1, 1, 0, "silu", true, true, true, false, false, 9, 70, 0.03f, true},
    {"3x3 s8 output, tiny output scale", 5, 9, 3, 1, 1, 1, "none", true, true, true, false, false, 9, 11, 1e-9f, true},
    {"depthwise 3x3, s8 output", 16, 16, 3, 16, 1, 1, "relu", true, true, true, false, false, 12, 13, 0.03f, true},
    // Sums small enough that every SiLU input lies within its exp clamp (silu_in_range).
    {"1x1 SiLU, small sums", 13, 7, 1, 1, 1, 0, "silu", true, true, true, false, false, 9, 70, 0.002f, false, 1e-4f},
    {"depthwise 3x3 SiLU, small sums", 16, 16, 3, 16, 1, 1, "silu", true, true, true, false, false, 12, 13, 0.002f, false, 1e-4f},
    {"3x3 SiLU, small sums, f32 output", 6, 10, 3, 1, 2, 1, "silu", true, true, false, false, false, 9, 11, 0.03f, false, 1e-4f},
};

}  // namespace

TEST_CASE("qdq conv fusion: fused groups match the unfused QDQ nodes within one output unit") {
  for (const QCase& c : kCases) {
    for (bool simd : {true, false}) {
      CAPTURE(c.name);
      CAPTURE(simd);
      const Built b = build(c, 7);
      // The cpu backend offers the fusion at the expected node.
      const auto fk = backends::cpu::fuse_qdq_conv(*b.start);
      REQUIRE(fk.has_value());
      CHECK(fk->output == b.model.graph->outputs[0]);
      if (b.start->is("Conv")) {  // x read by a second node: the kernel reads the u8 x itself
        REQUIRE(fk->inputs.size() == 1);
        CHECK(fk->inputs[0] == b.start->inputs[0]->producer->inputs[0]);
      } else {
        CHECK(fk->inputs.empty());
      }
      const Tensor x = random_x(c, 11);
      const Tensor want = run(b.model, x, false);
      backends::cpu::set_int8_simd_enabled(simd);
      const Tensor got = run(b.model, x, true);
      backends::cpu::set_int8_simd_enabled(true);
      const auto [diff, count] = compare(got, want);
      if (c.quant_out) {
        CHECK(diff <= 1.0);
        CHECK(count * 50 <= want.numel());  // off-by-one only where the f32 value lies near a tie
      } else {
        CHECK(diff < 1e-5);
      }
    }
  }
}

TEST_CASE("qdq conv fusion: not applied to nonzero weight zero points or a non-constant weight") {
  QCase c{"1x1", 4, 4, 1, 1, 1, 0, "relu"};
  Built b = build(c, 3);
  ir::Graph& g = *b.model.graph;
  // Nonzero weight zero point.
  ir::Value* wz = g.find_value("wz");
  REQUIRE(wz != nullptr);
  wz->initializer = Tensor::from_vector<int8_t>({4}, {0, 1, 0, 0});
  CHECK_FALSE(backends::cpu::fuse_qdq_conv(*b.start).has_value());
  // The results still agree with the unfused run (the group runs node by node).
  const Tensor x = random_x(c, 5);
  CHECK(compare(run(b.model, x, true), run(b.model, x, false)).first == 0);
}

TEST_CASE("int8 gemm: u8 x s8 with s32 accumulation equals a plain loop, SIMD and scalar") {
  std::mt19937 rng(1);
  for (int64_t M : {1, 5, 16}) {
    for (int64_t K : {1, 7, 36}) {
      for (int64_t N : {3, 16, 70}) {
        const auto a = random_ints<int8_t>(static_cast<size_t>(M * K), -128, 127, rng);
        const auto bm = random_ints<uint8_t>(static_cast<size_t>(K * N), 0, 255, rng);
        const backends::cpu::PackedS8 pa = backends::cpu::pack_s8(a.data(), M, K);
        const int64_t np = backends::cpu::panel_width(N);
        std::vector<uint8_t> panel(static_cast<size_t>(pa.kp * np), 0);
        for (int64_t k = 0; k < K; ++k)
          for (int64_t j = 0; j < N; ++j) panel[static_cast<size_t>(backends::cpu::panel_offset(k, j, np))] = bm[static_cast<size_t>(k * N + j)];
        for (bool simd : {true, false}) {
          backends::cpu::set_int8_simd_enabled(simd);
          std::vector<int32_t> c(static_cast<size_t>(M * N), -1);
          backends::cpu::gemm_u8s8(pa, 0, M, panel.data(), np, N, c.data(), N);
          backends::cpu::set_int8_simd_enabled(true);
          bool same = true;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              int32_t s = 0;
              for (int64_t k = 0; k < K; ++k) s += a[static_cast<size_t>(i * K + k)] * bm[static_cast<size_t>(k * N + j)];
              same = same && s == c[static_cast<size_t>(i * N + j)];
            }
          CAPTURE(M);
          CAPTURE(K);
          CAPTURE(N);
          CHECK(same);
        }
      }
    }
  }
  // Row codecs: round half to even, saturation, NaN -> 0, the same with SIMD on and off.
  std::vector<float> xs = {-1.f, 0.5f, 1.5f, 2.5f, -0.5f, 300.f, -300.f, std::nanf(""), 127.4f, 3.49f};
  while (xs.size() < 37) xs.push_back(static_cast<float>(xs.size()) * 7.3f - 100.f);
  for (bool simd : {true, false}) {
    backends::cpu::set_int8_simd_enabled(simd);
    std::vector<uint8_t> u(xs.size());
    std::vector<int8_t> s(xs.size());
    backends::cpu::quantize_row_u8(xs.data(), static_cast<int64_t>(xs.size()), 1.f, 10.f, u.data());
    backends::cpu::quantize_row_s8(xs.data(), static_cast<int64_t>(xs.size()), 1.f, 0.f, s.data());
    backends::cpu::set_int8_simd_enabled(true);
    for (size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(i);
      const float v = xs[i];
      const uint8_t wu = std::isnan(v) ? 0 : static_cast<uint8_t>(std::min(255.f, std::max(0.f, std::nearbyint(v) + 10.f)));
      const int8_t wsv = std::isnan(v) ? 0 : static_cast<int8_t>(std::min(127.f, std::max(-128.f, std::nearbyint(v))));
      CHECK(u[i] == wu);
      CHECK(s[i] == wsv);
    }
  }
}

TEST_CASE("int8 gemm: interleave4 places bytes where panel_offset says, null rows read 0; row_init starts the sums") {
  std::mt19937 rng(4);
  for (int64_t N : {5, 16, 64, 150, 200}) {
    const int64_t K = 7, np = backends::cpu::panel_width(N);  // the second quad has a null row
    const auto bm = random_ints<uint8_t>(static_cast<size_t>(K * N), 0, 255, rng);
    for (bool simd : {true, false}) {
      CAPTURE(N);
      CAPTURE(simd);
      backends::cpu::set_int8_simd_enabled(simd);
      std::vector<uint8_t> panel(static_cast<size_t>(8 * np), 0xAB), want(panel.size(), 0xAB);
      for (int64_t k4 = 0; k4 < 2; ++k4) {
        const uint8_t* r[4];
        for (int i = 0; i < 4; ++i) r[i] = k4 * 4 + i < K ? bm.data() + (k4 * 4 + i) * N : nullptr;
        backends::cpu::interleave4(r, N, panel.data() + k4 * 4 * np);
      }
      for (int64_t k = 0; k < 8; ++k)
        for (int64_t j = 0; j < N; ++j)
          want[static_cast<size_t>(backends::cpu::panel_offset(k, j, np))] = k < K ? bm[static_cast<size_t>(k * N + j)] : 0;
      CHECK(panel == want);
      // Two rows of weights; the sums start at row_init.
      const std::vector<int8_t> a = random_ints<int8_t>(static_cast<size_t>(2 * K), -128, 127, rng);
      const backends::cpu::PackedS8 pa = backends::cpu::pack_s8(a.data(), 2, K);
      const int32_t init[2] = {-100000, 12345};
      std::vector<int32_t> c(static_cast<size_t>(N));
      backends::cpu::gemm_u8s8(pa, 1, 2, panel.data(), np, N, c.data(), N, init);
      bool same = true;
      for (int64_t j = 0; j < N; ++j) {
        int32_t sum = init[1];
        for (int64_t k = 0; k < K; ++k) sum += a[static_cast<size_t>(K + k)] * bm[static_cast<size_t>(k * N + j)];
        same = same && sum == c[static_cast<size_t>(j)];
      }
      CHECK(same);
      backends::cpu::set_int8_simd_enabled(true);
    }
  }
}

TEST_CASE("int8 row codecs: quantize_row_u8/s8 divide by the scale exactly as the scalar loop, ties included") {
  // Values on and next to the half-integer grid of several scales, where x * (1 / scale) and
  // x / scale can round differently.
  std::vector<float> xs;
  for (float scale : {0.1f, 0.3f, 0.0073f, 3.7f}) {
    for (int k = -300; k <= 300; ++k) {
      const float t = static_cast<float>(k) * 0.5f * scale;
      xs.push_back(t);
      xs.push_back(std::nextafter(t, 1e9f));
      xs.push_back(std::nextafter(t, -1e9f));
    }
    for (bool simd : {true, false}) {
      backends::cpu::set_int8_simd_enabled(simd);
      std::vector<uint8_t> u(xs.size());
      std::vector<int8_t> sv(xs.size());
      backends::cpu::quantize_row_u8(xs.data(), static_cast<int64_t>(xs.size()), scale, 128.f, u.data());
      backends::cpu::quantize_row_s8(xs.data(), static_cast<int64_t>(xs.size()), scale, 0.f, sv.data());
      backends::cpu::set_int8_simd_enabled(true);
      int bad = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const float v = xs[i] / scale;
        bad += u[i] != static_cast<uint8_t>(std::min(255.f, std::max(0.f, std::nearbyint(v) + 128.f)));
        bad += sv[i] != static_cast<int8_t>(std::min(127.f, std::max(-128.f, std::nearbyint(v))));
      }
      CAPTURE(scale);
      CAPTURE(simd);
      CHECK(bad == 0);
    }
    xs.clear();
  }
}

TEST_CASE("qdq conv fusion: fused groups agree with ONNX Runtime on the same QDQ model") {
  REQUIRE_MESSAGE(test::have_onnxruntime(), test::kOrtMissing);
  for (const QCase& c : {QCase{"3x3 stride 2 pad 1", 6, 17, 3, 1, 2, 1, "silu"},
                         QCase{"depthwise 3x3", 16, 16, 3, 16, 1, 1, "silu", true, false, true, false, false, 20, 21},
                         QCase{"depthwise 3x3 stride 2", 24, 24, 3, 24, 2, 1, "relu", true, true, true, false, true, 14, 14}}) {
    CAPTURE(c.name);
    const Built b = build(c, 21);
    test::TempDir tmp("mcc-qdq-conv");
    const std::string path = (tmp.path / "m.onnx").string();
    ir::save_model(b.model, path);
    const Tensor x = random_x(c, 23);
    std::filesystem::create_directories(tmp.path / "data" / "s0");
    ir::save_npy(x, (tmp.path / "data" / "s0" / "x.npy").string());
    REQUIRE(test::write_ort_outputs(path, (tmp.path / "data").string()));
    const Tensor ort = ir::load_npy((tmp.path / "data" / "s0" / "output_0.npy").string());
    const Tensor got = run(b.model, x, true);
    const auto [diff, count] = compare(got, ort);
    CHECK(diff <= 1.0);
    CHECK(count * 50 <= ort.numel());
  }
}
