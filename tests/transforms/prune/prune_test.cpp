// prune{mode=unstructured}: per-layer and global sparsity reached exactly, override rules, ties,
// biases untouched; the mask codec; replay of a record gives a byte-identical model (both modes)
// and a record that does not fit is a ModelError; usage errors through the mcc binary.
#include <doctest/doctest.h>

#include <random>

#include "support/run_mcc.h"
#include "transforms/common/base64.h"
#include "transforms/prune/prune_test_util.h"

using namespace mcc;
using test::add_input;
using test::add_node;
using test::add_random_init;
using test::attr_ints;

namespace {

constexpr int kOpset = 13;

// X[1,4,6,6] -> conv1 W1[8,4,3,3] (288) + B1 -> Relu -> conv2 W2[5,8,1,1] (40) -> Y.
ir::Model two_convs(uint32_t seed = 1) {
  ir::Model m = test::empty_model(kOpset);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "X", {1, 4, 6, 6});
  ir::Value& w1 = add_random_init(g, "W1", {8, 4, 3, 3}, seed);
  ir::Value& b1 = add_random_init(g, "B1", {8}, seed + 1);
  ir::Value& w2 = add_random_init(g, "W2", {5, 8, 1, 1}, seed + 2);
  ir::Node& c1 = add_node(g, "Conv", "conv1", {&x, &w1, &b1}, {"c1"}, kOpset, {attr_ints("pads", {1, 1, 1, 1})});
  ir::Node& r = add_node(g, "Relu", "relu", {c1.outputs[0]}, {"r"}, kOpset);
  ir::Node& c2 = add_node(g, "Conv", "conv2", {r.outputs[0], &w2}, {"Y"}, kOpset);
  test::mark_output(g, *c2.outputs[0]);
  return m;
}

int64_t zeros(const ir::Model& m, const std::string& name) {
  return test::count_zeros(*m.graph->find_value(name)->initializer);
}

}  // namespace

TEST_CASE("prune unstructured: per-layer sparsity is reached exactly; biases are never pruned") {
  ir::Model m = two_convs();
  const auto feeds = test::random_feeds(m, 5);
  auto r = test::run_prune(m, {{"sparsity", "0.3"}});
  CHECK(r.modified);
  CHECK(zeros(m, "W1") == 86);  // round(0.3 * 288)
  CHECK(zeros(m, "W2") == 12);  // round(0.3 * 40)
  CHECK(zeros(m, "B1") == 0);
  CHECK(m.graph->find_value("W1")->initializer->dims() == std::vector<int64_t>{8, 4, 3, 3});
  CHECK(r.record["tensors"].size() == 2);
  CHECK(r.record["tensors"][0]["sparsity"].get<double>() == doctest::Approx(86.0 / 288));
  CHECK(r.stats["weights_zeroed"].get<int64_t>() == 98);
  CHECK_NOTHROW(ir::verify(m));
  CHECK(test::run_cpu(m, feeds).at(0).dims() == std::vector<int64_t>{1, 5, 6, 6});
  CHECK_FALSE(test::run_prune(m, {{"sparsity", "0.3"}}).modified);  // idempotent
}

TEST_CASE("prune unstructured: the smallest magnitudes go first") {
  ir::Model m = two_convs();
  const auto w = m.graph->find_value("W1")->initializer->data<float>();
  std::vector<float> mags;
  for (float x : w) mags.push_back(std::fabs(x));
  std::sort(mags.begin(), mags.end());
  const float threshold = mags[143];  // the 144th smallest: the largest pruned at 0.5
  std::vector<float> orig(w.begin(), w.end());
  test::run_prune(m, {{"sparsity", "0.5"}, {"include", "conv1"}});
  const auto after = m.graph->find_value("W1")->initializer->data<float>();
  int64_t wrong = 0;
  for (size_t i = 0; i < orig.size(); ++i)
    wrong += (after[i] == 0.f) != (std::fabs(orig[i]) <= threshold);
  CHECK(wrong == 0);
  CHECK(zeros(m, "W2") == 0);  // not included
}

TEST_CASE("prune unstructured: global scope reaches the total within one element") {
  ir::Model m = two_convs();
  auto r = test::run_prune(m, {{"sparsity", "0.5"}, {"scope", "global"}});
  CHECK(r.modified);
  CHECK(std::llabs(zeros(m, "W1") + zeros(m, "W2") - 164) <= 1);  // 0.5 * 328
  CHECK(r.stats["sparsity"].get<double>() == doctest::Approx(0.5).epsilon(0.005));
}

TEST_CASE("prune unstructured: override rules, first match wins; the record lists their matches") {
  ir::Model m = two_convs();
  auto r = test::run_prune(m, {{"sparsity", "0.3"}, {"overrides", "conv1:0.9,conv.*:0.1"}, {"exclude", "nothing|conv2"}});
  CHECK(zeros(m, "W1") == 259);  // round(0.9 * 288)
  CHECK(zeros(m, "W2") == 0);    // excluded
  CHECK(r.record["overrides"][0]["matched"] == nlohmann::ordered_json({"conv1"}));
  CHECK(r.record["overrides"][1]["matched"] == nlohmann::ordered_json({"conv2"}));
  CHECK(r.record["exclude"][0]["matched"] == nlohmann::ordered_json({"conv2"}));
}

TEST_CASE("prune unstructured: equal magnitudes are broken by position") {
  ir::Model m = two_convs();
  std::vector<float> ones(288, 1.f);
  m.graph->find_value("W1")->initializer = ir::Tensor::from_vector<float>({8, 4, 3, 3}, ones);
  test::run_prune(m, {{"sparsity", "0.25"}, {"include", "conv1"}});
  const auto w = m.graph->find_value("W1")->initializer->data<float>();
  int64_t first = 0;
  for (size_t i = 0; i < 72; ++i) first += w[i] == 0.f;
  CHECK(first == 72);
  CHECK(zeros(m, "W1") == 72);
}

TEST_CASE("prune: usage errors for bad sparsity, bad regexes and rules that match nothing") {
  ir::Model m = two_convs();
  CHECK_THROWS_AS(test::run_prune(m, {{"sparsity", "1.0"}}), UsageError);
  CHECK_THROWS_AS(test::run_prune(m, {{"sparsity", "-0.1"}}), UsageError);
  CHECK_THROWS_AS(test::run_prune(m, {{"overrides", "conv1"}}), UsageError);
  CHECK_THROWS_AS(test::run_prune(m, {{"overrides", "conv1:2"}}), UsageError);
  CHECK_THROWS_AS(test::run_prune(m, {{"exclude", "conv[("}}), UsageError);
  CHECK_THROWS_AS(test::run_prune(m, {{"overrides", "fc.*:0.5"}}), UsageError);
  CHECK_THROWS_AS(test::run_prune(m, {{"include", "conv3"}}), UsageError);
  CHECK(zeros(m, "W1") == 0);  // nothing was changed before the errors
}

TEST_CASE("prune mask codec: round trips and rejects masks of the wrong size") {
  std::mt19937 rng(3);
  for (size_t n : {0, 1, 7, 8, 9, 100, 1000}) {
    CAPTURE(n);
    std::vector<bool> random(n), runs(n);
    for (size_t i = 0; i < n; ++i) {
      random[i] = rng() & 1;
      runs[i] = (i / 37) % 2 == 1;
    }
    for (const auto& bits : {random, runs}) {
      const auto e = transforms::prune::encode_mask(bits);
      CHECK(transforms::prune::decode_mask(e, n) == bits);
      CHECK_THROWS_AS(transforms::prune::decode_mask(e, n + 9), ModelError);
    }
  }
  CHECK(transforms::prune::encode_mask(std::vector<bool>(1000, false)).encoding == "rle");
  CHECK_THROWS_AS(transforms::prune::decode_mask({"rle", "!!!!"}, 4), ModelError);
  CHECK_THROWS_AS(transforms::prune::decode_mask({"zip", "AAAA"}, 4), ModelError);
  CHECK(transforms::base64_decode(transforms::base64_encode("mcc!x")) == "mcc!x");
}

TEST_CASE("prune: replaying a record gives a byte-identical model, without ranking anything") {
  for (const char* mode : {"unstructured", "channel"}) {
    CAPTURE(mode);
    ir::Model a = two_convs(), b = two_convs();
    auto r = test::run_prune(a, {{"mode", mode}, {"sparsity", "0.4"}, {"scope", "global"}});
    CHECK(r.modified);
    // The record decides, not the options: a different sparsity is not looked at on replay.
    auto rr = test::run_prune(b, {{"mode", mode}, {"sparsity", "0.1"}}, &r.record);
    CHECK(rr.modified);
    CHECK(ir::serialize_model(a) == ir::serialize_model(b));
    CHECK(rr.stats == r.stats);
  }
}

TEST_CASE("prune: a record that does not fit the model is a ModelError") {
  ir::Model a = two_convs();
  auto un = test::run_prune(a, {{"sparsity", "0.5"}});
  ir::Model other = test::empty_model(kOpset);
  {
    ir::Graph& g = *other.graph;
    ir::Value& x = add_input(g, "X", {1, 4, 6, 6});
    ir::Value& w1 = add_random_init(g, "W1", {6, 4, 3, 3}, 1);
    ir::Node& c = add_node(g, "Conv", "conv1", {&x, &w1}, {"Y"}, kOpset);
    test::mark_output(g, *c.outputs[0]);
  }
  CHECK_THROWS_AS(test::run_prune(other, {{"sparsity", "0.5"}}, &un.record), ModelError);
  ir::Model b = two_convs();
  auto ch = test::run_prune(b, {{"mode", "channel"}, {"sparsity", "0.5"}});
  REQUIRE(ch.modified);
  CHECK_THROWS_AS(test::run_prune(b, {{"mode", "channel"}, {"sparsity", "0.5"}}, &ch.record), ModelError);  // 4 channels now
  CHECK_THROWS_AS(test::run_prune(other, {{"mode", "channel"}, {"sparsity", "0.5"}}, &un.record), ModelError);  // mode
}

TEST_CASE("mcc convert with prune: exit 2 on bad options, --state replays byte-identical") {
  test::TempDir tmp("mcc-prune-cli");
  const std::string in = (tmp.path / "in.onnx").string();
  ir::save_model(two_convs(), in);
  const std::string out = (tmp.path / "out.onnx").string();
  auto bad = test::run_mcc({"convert", in, "-o", out, "-p", "prune{sparsity=1.5}"});
  CHECK(bad.code == 2);
  CHECK(test::one_error_line(bad.err));
  auto nomatch = test::run_mcc({"convert", in, "-o", out, "-p", "prune{overrides=fc.*:0.5}"});
  CHECK(nomatch.code == 2);
  CHECK(nomatch.err.find("matches no prunable layer") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
  for (const char* spec : {"prune{sparsity=0.5 scope=global}", "prune{mode=channel sparsity=0.5}"}) {
    CAPTURE(spec);
    auto r1 = test::run_mcc({"convert", in, "-o", out, "-p", spec});
    REQUIRE(r1.code == 0);
    const std::string out2 = (tmp.path / "out2.onnx").string();
    auto r2 = test::run_mcc({"convert", in, "-o", out2, "--state", (tmp.path / "out.mcc.json").string()});
    INFO(r2.err);
    CHECK(r2.code == 0);
    CHECK(test::slurp(out) == test::slurp(out2));
  }
}
