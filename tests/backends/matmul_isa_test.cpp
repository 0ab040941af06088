// f32 MatMul on each instruction set the packed GEMM has (backends/cpu/kernels/matmul_f32.cpp):
// one-node models run with the kernels switched between AVX-512, AVX2+FMA and Eigen's GEMM. The
// two packed kernels must give the same bits (one fused multiply-add per k, in order, on every
// set), at 1 and 2 threads; every set within f32 rounding of a double product. Shapes cover the
// row-tile and half-panel edges (M not a multiple of 6 or 8, N not a multiple of 16 or 32), K
// blocks (K > 512), batches with a shared and a per-batch B, constant B (packed once), and a
// product large enough to be written out with non-temporal stores.
// Instruction sets the CPU lacks are reported, not run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/kernels/matmul_f32.h"
#include "backends/executor.h"
#include "support/graph_builder.h"

namespace {

using namespace mcc;
using backends::cpu::MatmulIsa;

struct Case {
  std::vector<int64_t> a, b;
  bool const_b = false;
};

ir::Model matmul_model(const Case& c) {
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& a = test::add_input(g, "a", c.a);
  ir::Value& b = c.const_b ? test::add_random_init(g, "b", c.b, 7) : test::add_input(g, "b", c.b);
  ir::Node& n = test::add_node(g, "MatMul", "mm", {&a, &b}, {"y"}, 13);
  test::mark_output(g, *n.outputs[0]);
  return m;
}

std::vector<float> run_with(const ir::Model& m, const std::vector<std::pair<std::string, backends::RValue>>& feeds,
                            int threads, bool keep_weight_copies = true) {
  backends::ExecOptions o{threads};
  o.keep_weight_copies = keep_weight_copies;
  backends::Executor ex(m, o);
  const ir::Tensor y = ex.run(feeds).at(0).tensor;
  auto d = y.data<float>();
  return {d.begin(), d.end()};
}

// Y in double from the same operands (numpy broadcasting of the batch dims kept simple: equal
// batch dims, or B without batch dims).
std::vector<double> reference(const std::vector<float>& a, const std::vector<float>& b, const Case& c) {
  const int64_t K = c.a.back(), M = c.a[c.a.size() - 2], N = c.b.back();
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < c.a.size(); ++i) batches *= c.a[i];
  const bool b_batched = c.b.size() > 2;
  std::vector<double> y(static_cast<size_t>(batches * M * N));
  for (int64_t t = 0; t < batches; ++t)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += double(a[static_cast<size_t>((t * M + i) * K + k)]) *
               double(b[static_cast<size_t>(((b_batched ? t : 0) * K + k) * N + j)]);
        y[static_cast<size_t>((t * M + i) * N + j)] = s;
      }
  return y;
}

struct IsaGuard {
  MatmulIsa saved = backends::cpu::matmul_f32_isa();
  ~IsaGuard() { backends::cpu::matmul_f32_use_isa(saved); }
};

}  // namespace

TEST_CASE("f32 MatMul: AVX-512 and AVX2 kernels give the same bits, Eigen agrees within rounding") {
  IsaGuard guard;
  const std::vector<Case> cases = {
      {{1, 1}, {1, 16}},           {{7, 513}, {513, 33}},      {{13, 1100}, {1100, 50}},
      {{6, 64}, {64, 16}},         {{25, 300}, {300, 100}},    {{3, 5, 40}, {3, 40, 48}},
      {{2, 9, 70}, {70, 17}, true}, {{33, 128}, {128, 64}, true},
      {{64, 8}, {8, 65536}}};  // a 16 MB product: rows staged and streamed out with non-temporal stores
  std::vector<MatmulIsa> sets;
  for (MatmulIsa isa : {MatmulIsa::Avx512, MatmulIsa::Avx2, MatmulIsa::Eigen}) {
    if (backends::cpu::matmul_f32_use_isa(isa)) sets.push_back(isa);
    else MESSAGE("this CPU has no " << backends::cpu::matmul_isa_name(isa) << ": its kernel is not run here");
  }
  REQUIRE(!sets.empty());
  for (const Case& c : cases) {
    CAPTURE(c.a);
    CAPTURE(c.b);
    const ir::Model m = matmul_model(c);
    const auto feeds = test::random_feeds(m, 11);
    const auto fa = feeds[0].second.tensor.data<float>();
    std::vector<float> a(fa.begin(), fa.end()), b;
    const ir::Tensor bt = c.const_b ? test::random_tensor(c.b, 7) : feeds.at(1).second.tensor;  // add_random_init's seed
    const auto fb = bt.data<float>();
    b.assign(fb.begin(), fb.end());
    const std::vector<double> ref = reference(a, b, c);
    std::vector<float> packed;  // the first packed kernel's result, at 1 thread
    for (MatmulIsa isa : sets) {
      CAPTURE(backends::cpu::matmul_isa_name(isa));
      REQUIRE(backends::cpu::matmul_f32_use_isa(isa));
      for (int threads : {1, 2}) {
        CAPTURE(threads);
        const std::vector<float> y = run_with(m, feeds, threads);
        REQUIRE(y.size() == ref.size());
        const int64_t K = c.a.back();
        double worst = 0;
        for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - ref[i]));
        CHECK(worst <= 1e-6 * static_cast<double>(K));  // operands in [0, 1): sums up to K
        if (isa == MatmulIsa::Eigen) continue;
        if (packed.empty()) packed = y;
        else CHECK(std::memcmp(packed.data(), y.data(), y.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("f32 MatMul: switching to an instruction set the CPU lacks is refused and changes nothing") {
  IsaGuard guard;
  const MatmulIsa before = backends::cpu::matmul_f32_isa();
  CHECK(backends::cpu::matmul_f32_use_isa(MatmulIsa::Eigen));
  CHECK_FALSE(backends::cpu::matmul_f32_available());
  CHECK(backends::cpu::matmul_f32_use_isa(before));
  CHECK(backends::cpu::matmul_f32_isa() == before);
  CHECK(std::string(backends::cpu::matmul_isa_name(MatmulIsa::Avx2)) == "avx2");
}

TEST_CASE("f32 MatMul with a constant B not kept packed: Eigen's GEMM, within rounding of the packed kernel") {
  // Batches share the constant B; N ends in a partial panel.
  const Case c{{2, 7, 40}, {40, 4096 + 100}, true};
  const ir::Model m = matmul_model(c);
  const auto feeds = test::random_feeds(m, 12);
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    const std::vector<float> kept = run_with(m, feeds, threads, true);
    const std::vector<float> unkept = run_with(m, feeds, threads, false);
    REQUIRE(unkept.size() == kept.size());
    double worst = 0;
    for (size_t i = 0; i < kept.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(kept[i] - unkept[i])));
    CHECK(worst <= 1e-6 * 40);  // operands in [0, 1): sums up to K = 40
    CHECK(*std::max_element(unkept.begin(), unkept.end()) > 0);
  }
}
