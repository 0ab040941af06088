// GPTQ within a memory bound: wide weights quantized a chunk of columns at a time give the codes
// of quantizing each chunk on its own; layers are grouped for calibration passes by their
// Hessians' bytes, in graph order, with layers sharing a weight or an input kept together; a
// calibration pass that ends at its last watched tensor collects the same statistics as a full
// run, and the executor leaves the rest of the graph unrun.
#include <doctest/doctest.h>

#include <random>

#include "backends/executor.h"
#include "quantize_test_util.h"
#include "transforms/quantize/calibration.h"
#include "transforms/quantize/gptq.h"
#include "transforms/quantize/weight_only.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::transforms::quantize;

namespace {

/// 64 comma-separated values ((i * mul) % mod) / div - off, i = 0..63: an 8x8 initializer's text.
std::string values(int mul, int mod, double div, double off) {
  std::string s;
  for (int i = 0; i < 64; ++i) s += (i ? ", " : "") + std::to_string((i * mul % mod) / div - off);
  return s;
}

// X -> MatMul(A) -> Relu -> MatMul(B) -> Relu -> MatMul(A again: a tied weight) -> Y, and a
// MatMul(C) reading the first Relu too, so A's two readers, and C with B, share clusters.
ir::Model chain() {
  return parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4, 8] X) => (float[4, 8] Y, float[4, 8] Z) <float[8, 8] A = {)" + values(7, 11, 10, 0) +
                         "}, float[8, 8] B = {" + values(5, 13, 12, 0.4) + "}, float[8, 8] C = {" + values(3, 7, 6, 0.5) +
                         R"(}> {
      H1 = MatMul(X, A)
      R1 = Relu(H1)
      H2 = MatMul(R1, B)
      Z = MatMul(R1, C)
      R2 = Relu(H2)
      Y = MatMul(R2, A)
    })");
}

std::vector<Candidate> matmuls(ir::Model& m) {
  std::vector<Candidate> out;
  for (ir::Node* n : m.graph->nodes())
    if (n->op_type == "MatMul") out.push_back(Candidate{n, {}, {}});
  return out;
}

std::vector<std::string> names(const std::vector<Candidate>& group) {
  std::vector<std::string> out;
  for (const Candidate& c : group) out.push_back(c.node->outputs[0]->name);
  return out;
}

}  // namespace

TEST_CASE("gptq: a wide weight quantized a chunk of columns at a time gives each chunk's own codes") {
  const int64_t K = 48, N1 = 2048, N2 = 300, N = N1 + N2, T = 96;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> X(T, K);
  for (int64_t i = 0; i < X.size(); ++i) X.data()[i] = nd(rng);
  for (int64_t t = 0; t < T; ++t)  // the first 8 features follow feature 0: correlated inputs
    for (int64_t k = 1; k < 8; ++k) X(t, k) += 3.f * X(t, 0);
  HessianAccumulator h(K);
  h.add(X.data(), T, K);
  std::vector<float> w(static_cast<size_t>(K * N)), left(static_cast<size_t>(K * N1)), right(static_cast<size_t>(K * N2));
  for (float& v : w) v = nd(rng);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) (n < N1 ? left[static_cast<size_t>(k * N1 + n)] : right[static_cast<size_t>(k * N2 + n - N1)]) = w[static_cast<size_t>(k * N + n)];
  BlockFormat f;
  f.block_size = 16;
  const GptqResult all = gptq_quantize(w.data(), K, N, h.hessian(), f, GptqOptions{});
  const GptqResult a = gptq_quantize(left.data(), K, N1, h.hessian(), f, GptqOptions{});
  const GptqResult b = gptq_quantize(right.data(), K, N2, h.hessian(), f, GptqOptions{});
  int64_t mismatched = 0;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      const int32_t want = n < N1 ? a.q.codes[static_cast<size_t>(k * N1 + n)] : b.q.codes[static_cast<size_t>(k * N2 + n - N1)];
      mismatched += all.q.codes[static_cast<size_t>(k * N + n)] != want;
    }
  CHECK(mismatched == 0);
  for (int64_t blk = 0; blk < K / 16; ++blk) {
    CHECK(all.q.scale[static_cast<size_t>(blk * N + 5)] == a.q.scale[static_cast<size_t>(blk * N1 + 5)]);
    CHECK(all.q.scale[static_cast<size_t>(blk * N + N1 + 7)] == b.q.scale[static_cast<size_t>(blk * N2 + 7)]);
  }
  // The losses add up over the chunks, and GPTQ beats rounding on these correlated inputs.
  CHECK(all.loss == doctest::Approx(a.loss + b.loss).epsilon(1e-9));
  CHECK(all.rtn_loss == doctest::Approx(a.rtn_loss + b.rtn_loss).epsilon(1e-9));
  CHECK(all.loss < all.rtn_loss);
  CHECK(all.loss == doctest::Approx(proxy_loss(w.data(), all.q, 16, h.hessian())));
}

TEST_CASE("gptq: layers are grouped for calibration passes by Hessian bytes, in graph order, shared weights together") {
  ir::Model m = chain();
  const std::vector<Candidate> kept = matmuls(m);
  REQUIRE(kept.size() == 4);
  // One 8x8 float Hessian per distinct input: 256 bytes.
  const auto one = gptq_groups(m, kept, int64_t{1} << 30);
  REQUIRE(one.size() == 1);
  CHECK(one[0].size() == 4);
  // A budget of one Hessian: H1 and Y share A, so X's and R2's Hessians go together (past the
  // budget, a cluster of its own); H2 and Z share R1. The R1 cluster's last input comes first.
  const auto tight = gptq_groups(m, kept, 256);
  REQUIRE(tight.size() == 2);
  CHECK(names(tight[0]) == std::vector<std::string>{"H2", "Z"});
  CHECK(names(tight[1]) == std::vector<std::string>{"H1", "Y"});
  CHECK(hessian_budget(m) == int64_t{64} << 20);
}

TEST_CASE("calibration that stops at its last watched tensor: the same statistics, the rest of the graph not run") {
  const ir::Model m = chain();
  const CalibDir data({4, 8}, 3, 21);
  CalibrationConfig cfg;
  cfg.data_dir = data.path();
  cfg.threads = 1;
  int64_t taps_full = 0, taps_cut = 0;
  cfg.tap_watch = {"R1"};
  cfg.tap = [&](const std::string&, const ir::Tensor&) { ++taps_full; };
  const CalibrationResult full = calibrate(m, {"H1", "R1"}, cfg);
  cfg.stop_after_watched = true;
  cfg.tap = [&](const std::string&, const ir::Tensor&) { ++taps_cut; };
  const CalibrationResult cut = calibrate(m, {"H1", "R1"}, cfg);
  CHECK(full.samples == 3);
  CHECK(cut.samples == 3);
  CHECK(taps_full == 3);
  CHECK(taps_cut == 3);
  CHECK(cut.stats.at("H1") == full.stats.at("H1"));
  CHECK(cut.stats.at("R1") == full.stats.at("R1"));

  // The executor itself: runs end after the given node; outputs not computed by then are empty.
  backends::Executor ex(m);
  std::vector<std::string> seen;
  ex.set_observer([&](const ir::Node& n, const ir::Value&, const backends::RValue&) { seen.push_back(n.outputs[0]->name); });
  const ir::Node* relu = m.graph->find_value("R1")->producer;
  ex.set_last_node(relu);
  const auto outs = ex.run({{"X", backends::RValue::of(random_tensor({4, 8}, 3, 0.f, 1.f))}});
  CHECK(seen == std::vector<std::string>{"H1", "R1"});
  REQUIRE(outs.size() == 2);
  CHECK_FALSE(outs[0].defined());
  CHECK_FALSE(outs[1].defined());
  ex.set_last_node(nullptr);
  seen.clear();
  const auto all = ex.run({{"X", backends::RValue::of(random_tensor({4, 8}, 3, 0.f, 1.f))}});
  CHECK(seen.size() == 6);
  CHECK(all[0].defined());
  CHECK(all[1].defined());
}
