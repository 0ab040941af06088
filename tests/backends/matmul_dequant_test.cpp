// The MatMul by a DequantizeLinear of constant int8 codes (backends/cpu/kernels/matmul_dequant.h):
// the fused kernel matches the two nodes run one by one (per-tensor and per-column scales, int8
// and uint8 codes with and without zero points, batched A), both when the run keeps the weight
// packed and when it dequantizes a band of columns at a time (a weight wider than one band);
// the weight's DequantizeLinear no longer runs; a DequantizeLinear read by two MatMuls is left
// to the separate nodes.
#include <doctest/doctest.h>

#include <cmath>

#include "backends/executor.h"
#include "support/graph_builder.h"

using namespace mcc;
using ir::DType;
using ir::Tensor;

namespace {

struct DqCase {
  const char* name;
  int64_t K, N;
  bool per_column, s8, zero_point;
  std::vector<int64_t> a_dims;  // ends in K
};

struct Built {
  ir::Model model;
  const ir::Node* weight_dq = nullptr;
  std::vector<std::pair<std::string, backends::RValue>> feeds;
};

Built build(const DqCase& c, bool shared) {
  Built b{test::empty_model(13), nullptr, {}};
  ir::Graph& g = *b.model.graph;
  ir::Value& a = test::add_input(g, "a", c.a_dims, DType::F32);
  b.feeds.push_back({"a", backends::RValue::of(test::random_tensor(c.a_dims, 3, -2.f, 2.f))});
  ir::Value& wq = c.s8 ? g.add_initializer("wq", test::random_int_tensor<int8_t>({c.K, c.N}, -127, 127, 5))
                       : g.add_initializer("wq", test::random_int_tensor<uint8_t>({c.K, c.N}, 0, 255, 5));
  const int64_t ns = c.per_column ? c.N : 1;
  std::vector<float> sv(static_cast<size_t>(ns));
  for (int64_t i = 0; i < ns; ++i) sv[static_cast<size_t>(i)] = 0.001f + 0.0003f * static_cast<float>(i % 17);
  ir::Value& ws = g.add_initializer("ws", c.per_column ? Tensor::from_vector<float>({ns}, sv) : Tensor::scalar<float>(sv[0]));
  std::vector<ir::Value*> dq_in = {&wq, &ws};
  if (c.zero_point) {
    if (c.s8) {
      std::vector<int8_t> z(static_cast<size_t>(ns));
      for (int64_t i = 0; i < ns; ++i) z[static_cast<size_t>(i)] = static_cast<int8_t>(i % 7 - 3);
      dq_in.push_back(&g.add_initializer("wz", c.per_column ? Tensor::from_vector<int8_t>({ns}, z) : Tensor::scalar<int8_t>(z[0])));
    } else {
      std::vector<uint8_t> z(static_cast<size_t>(ns));
      for (int64_t i = 0; i < ns; ++i) z[static_cast<size_t>(i)] = static_cast<uint8_t>(120 + i % 9);
      dq_in.push_back(&g.add_initializer("wz", c.per_column ? Tensor::from_vector<uint8_t>({ns}, z) : Tensor::scalar<uint8_t>(z[0])));
    }
  }
  ir::Node& dq = test::add_node(g, "DequantizeLinear", "dq_w", dq_in, {"wd"}, 13, {test::attr_i("axis", 1)});
  b.weight_dq = &dq;
  ir::Value* y = test::add_node(g, "MatMul", "mm", {&a, dq.outputs[0]}, {"y"}, 13).outputs[0];
  test::mark_output(g, *y, DType::F32);
  if (shared) {
    ir::Value* y2 = test::add_node(g, "MatMul", "mm2", {&a, dq.outputs[0]}, {"y2"}, 13).outputs[0];
    test::mark_output(g, *y2, DType::F32);
  }
  return b;
}

struct Run {
  Tensor y;
  bool weight_dq_ran = false;
};

Run run(const Built& b, bool fuse, bool keep) {
  backends::ExecOptions o;
  o.threads = 2;
  o.fuse = fuse;
  o.keep_weight_copies = keep;
  o.profile = true;
  backends::Executor ex(b.model, o);
  Run r{ex.run(b.feeds).at(0).tensor};
  for (const auto& t : ex.node_times()) r.weight_dq_ran = r.weight_dq_ran || t.node == b.weight_dq;
  return r;
}

double max_rel_error(const Tensor& got, const Tensor& want) {
  const auto g = got.data<float>(), w = want.data<float>();
  double worst = 0, scale = 1e-6;
  for (float v : w) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(g[i]) - w[i]) / scale);
  return worst;
}

const DqCase kCases[] = {
    {"per-tensor s8, no zero point, 2-D A", 48, 40, false, true, false, {5, 48}},
    {"per-column s8 with zero points, batched A", 64, 96, true, true, true, {2, 3, 64}},
    {"per-column u8 with zero points, 1-D A", 32, 24, true, false, true, {32}},
    {"per-tensor u8 with zero point", 16, 72, false, false, true, {4, 16}},
    // 16 MiB bands of a K = 512 weight hold 8192 columns: this one takes two bands when lean.
    {"per-column s8, wider than one band", 512, 8192 + 96, true, true, false, {3, 512}},
};

}  // namespace

TEST_CASE("matmul dequant fusion: matches the separate nodes, kept or banded") {
  for (const DqCase& c : kCases) {
    CAPTURE(c.name);
    const Built b = build(c, false);
    const Run ref = run(b, false, true);
    CHECK(ref.weight_dq_ran);
    REQUIRE(ref.y.dims() == (c.a_dims.size() == 1 ? std::vector<int64_t>{c.N} : [&] {
              std::vector<int64_t> d = c.a_dims;
              d.back() = c.N;
              return d;
            }()));
    for (const bool keep : {true, false}) {
      CAPTURE(keep);
      const Run fused = run(b, true, keep);
      CHECK_FALSE(fused.weight_dq_ran);
      REQUIRE(fused.y.dims() == ref.y.dims());
      CHECK(max_rel_error(fused.y, ref.y) < 1e-5);
      // A second run reads the kept weight (or dequantizes again): the same result.
      CHECK(max_rel_error(run(b, true, keep).y, fused.y) == 0);
    }
  }
}

TEST_CASE("matmul dequant fusion: a weight read by two MatMuls stays a separate DequantizeLinear") {
  const Built b = build(kCases[1], true);
  const Run fused = run(b, true, false);
  CHECK(fused.weight_dq_ran);
  CHECK(max_rel_error(fused.y, run(b, false, false).y) < 1e-5);
}
