// Probability outputs (a Sigmoid's): which outputs count as such, the "nothing in both" test,
// and `mcc eval`'s verdict on a sample where both models see nothing against one where the
// compressed model sees something the float one does not.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "judge/agreement.h"
#include "judge/eval_outputs.h"
#include "judge/probability_outputs.h"
#include "support/graph_builder.h"
#include "transforms/quantize/quantize_test_util.h"

namespace judge = mcc::judge;
using mcc::ir::Tensor;

namespace {

Tensor map_of(std::vector<float> v) { return Tensor::from_vector<float>({1, 1, 2, static_cast<int64_t>(v.size() / 2)}, v); }

/// Y = Sigmoid(X * a + b), X [1, 8].
mcc::ir::Model sigmoid_model(float a, float b) {
  return mcc::test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8] X) => (float[1,8] Y) {
      a = Constant<value = float {)" + std::to_string(a) + R"(}>()
      b = Constant<value = float {)" + std::to_string(b) + R"(}>()
      m = Mul(X, a)
      s = Add(m, b)
      Y = Sigmoid(s)
    })");
}

/// One sample of one output through EvalOutputs under the int8 rules; returns the judged output.
judge::JudgedOutput eval_one(const Tensor& got, const Tensor& want, bool probability) {
  judge::EvalOutputs e(judge::default_rules("int8"), {"prob"}, {probability});
  std::vector<mcc::backends::RValue> g{mcc::backends::RValue::of(got.clone())};
  std::vector<std::optional<mcc::backends::RValue>> w{mcc::backends::RValue::of(want.clone())};
  e.add_sample("s0", g, w);
  return e.outputs()[0];
}

}  // namespace

TEST_CASE("probability outputs: a Sigmoid's output, also through QuantizeLinear/DequantizeLinear; not a Relu's") {
  const auto m = mcc::test::parse_onnx_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] p, float[4] r, float[4] q) {
      p = Sigmoid(x)
      r = Relu(x)
      s = Sigmoid(x)
      sq = QuantizeLinear(s, sc, zp)
      q = DequantizeLinear(sq, sc, zp)
      sc = Constant<value = float {0.00392}>()
      zp = Constant<value = uint8 {0}>()
    })");
  const auto flags = judge::probability_outputs(*m.graph);
  REQUIRE(flags.size() == 3);
  CHECK(flags[0]);
  CHECK_FALSE(flags[1]);
  CHECK(flags[2]);
}

TEST_CASE("nothing in both: every value of both in [0, 0.01); one value at the limit, a negative or a NaN is something") {
  const Tensor tiny = map_of({1e-5f, 2e-4f, 0.f, 0.0099f});
  CHECK(judge::nothing_in_both(tiny, map_of({3e-6f, 1e-3f, 1e-7f, 0.f})));
  CHECK_FALSE(judge::nothing_in_both(tiny, map_of({3e-6f, 1e-3f, 1e-7f, 0.01f})));
  CHECK_FALSE(judge::nothing_in_both(map_of({-1e-5f, 0.f, 0.f, 0.f}), tiny));
  CHECK_FALSE(judge::nothing_in_both(map_of({std::nanf(""), 0.f, 0.f, 0.f}), tiny));
  CHECK_FALSE(judge::nothing_in_both(tiny, map_of({0.f, 0.f})));
}

TEST_CASE("eval: an empty probability map agrees however its near-zero values point; a spurious detection fails") {
  // The float model: background everywhere (1e-5). Int8: other near-zero values, cosine ~0.
  const Tensor want = map_of({1e-5f, 1e-5f, 1e-5f, 1e-5f, 1e-5f, 1e-5f});
  const Tensor quiet = map_of({0.f, 0.f, 0.f, 0.f, 0.f, 4e-3f});
  const auto agreed = eval_one(quiet, want, true);
  CHECK(agreed.failed == 0);
  CHECK(agreed.stats.nothing_samples == 1);
  CHECK(agreed.stats.cosine_min == doctest::Approx(1.0));
  // The same values in an output that is not a probability: judged by cosine, and it fails.
  const auto plain = eval_one(quiet, want, false);
  CHECK(plain.failed == 1);
  CHECK(plain.stats.nothing_samples == 0);
  CHECK(plain.stats.cosine_min < 0.5);
  // Int8 sees text where the float model sees none: compared as usual, and it fails.
  const auto spurious = eval_one(map_of({0.f, 0.f, 0.f, 0.f, 0.f, 0.6f}), want, true);
  CHECK(spurious.failed == 1);
  CHECK(spurious.stats.nothing_samples == 0);
}

TEST_CASE("check: samples where the reference and the model both see nothing agree; a model that sees something is compared") {
  mcc::test::CalibDir samples({1, 8}, 6, 4100);  // X in [0, 1]
  judge::AgreementInput in;
  for (int i = 0; i < 6; ++i) in.sample_dirs.push_back(samples.path() + "/s" + std::to_string(i));
  // Reference e^(x-12), the model e^(-3x-10.5): both under 1e-4, pointing different ways.
  const auto quiet = judge::measure_agreement(sigmoid_model(-3.f, -10.5f), sigmoid_model(1.f, -12.f), in);
  REQUIRE(quiet.size() == 1);
  CHECK(quiet[0].probability);
  CHECK(quiet[0].stats.nothing_samples == 6);
  CHECK(quiet[0].stats.cosine_mean() == doctest::Approx(1.0));
  // The model's probabilities reach 0.27: compared by cosine as any output.
  const auto loud = judge::measure_agreement(sigmoid_model(-3.f, -1.f), sigmoid_model(1.f, -12.f), in);
  CHECK(loud[0].stats.nothing_samples == 0);
  CHECK(loud[0].stats.cosine_mean() < 0.99);
}
