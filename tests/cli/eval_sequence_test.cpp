// `mcc eval` and the check stage on sequence models: a bigram "language model" (logits =
// table[input_ids]) is judged by perplexity ratio and next-token agreement against its
// reference, a damaged copy fails, `--metric perplexity` alone reports the model's own perplexity
// as computed by hand here, a figure on too few tokens is undecided (exit 1), and an encoder's
// padded positions do not count.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/graph_builder.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;
using nlohmann::json;

namespace {

constexpr int64_t kVocab = 16, kSeq = 32, kWindows = 6;

int64_t next_token(int64_t i) { return (5 * i + 3) % kVocab; }

/// Row i puts logit 3 on next_token(i), seeded noise in [-0.5, 0.5] elsewhere; `shift` moves the
/// peak to the wrong token, `noise` adds seeded noise everywhere (a slightly changed model).
std::vector<float> bigram_table(int64_t shift, float noise) {
  std::mt19937 rng(7), rng2(11);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f), n(-noise, noise);
  std::vector<float> t(static_cast<size_t>(kVocab * kVocab));
  for (int64_t i = 0; i < kVocab; ++i)
    for (int64_t j = 0; j < kVocab; ++j) {
      float v = j == (next_token(i) + shift) % kVocab ? 3.0f : u(rng);
      if (noise > 0) v += n(rng2);
      t[static_cast<size_t>(i * kVocab + j)] = v;
    }
  return t;
}

/// input_ids [1, T] (and attention_mask [1, T] when `with_mask`) -> Gather(table) named `output`.
void save_table_model(const std::vector<float>& table, const std::string& output, bool with_mask, const fs::path& path) {
  mcc::ir::Model m = mcc::test::empty_model(13);
  mcc::ir::Graph& g = *m.graph;
  mcc::ir::Value& ids = mcc::test::add_input(g, "input_ids", {1, kSeq}, mcc::ir::DType::I64);
  if (with_mask) mcc::test::add_input(g, "attention_mask", {1, kSeq}, mcc::ir::DType::I64);
  mcc::ir::Value& tab = g.add_initializer("table", mcc::ir::Tensor::from_vector<float>({kVocab, kVocab}, table));
  auto& n = mcc::test::add_node(g, "Gather", "gather", {&tab, &ids}, {output}, 13, {mcc::test::attr_i("axis", 0)});
  mcc::test::mark_output(g, *n.outputs[0]);
  mcc::ir::save_model(m, path.string());
}

/// Windows that follow the bigram rule 80 % of the time; with `pad`, the last 8 positions are
/// token 0 with attention_mask 0 (real tokens are never 0 then).
std::vector<std::vector<int64_t>> save_windows(const fs::path& dir, bool pad, bool mask_file) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> tok(1, kVocab - 1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::vector<int64_t>> all;
  for (int64_t w = 0; w < kWindows; ++w) {
    std::vector<int64_t> ids(kSeq), mask(kSeq, 1);
    ids[0] = tok(rng);
    for (int64_t t = 1; t < kSeq; ++t) {
      ids[t] = u(rng) < 0.8 ? next_token(ids[t - 1]) : tok(rng);
      if (pad && ids[t] == 0) ids[t] = 1;
    }
    if (pad)
      for (int64_t t = kSeq - 8; t < kSeq; ++t) ids[t] = 0, mask[t] = 0;
    const fs::path s = dir / ("s" + std::to_string(w));
    fs::create_directories(s);
    mcc::ir::save_npy(mcc::ir::Tensor::from_vector<int64_t>({1, kSeq}, ids), (s / "input_ids.npy").string());
    if (mask_file) mcc::ir::save_npy(mcc::ir::Tensor::from_vector<int64_t>({1, kSeq}, mask), (s / "attention_mask.npy").string());
    all.push_back(ids);
  }
  return all;
}

/// exp(mean -log softmax(table[ids[t]])[ids[t + 1]]) over every window, in double.
double perplexity_by_hand(const std::vector<float>& table, const std::vector<std::vector<int64_t>>& windows) {
  double nll = 0;
  int64_t n = 0;
  for (const auto& ids : windows)
    for (size_t t = 0; t + 1 < ids.size(); ++t) {
      const float* row = &table[static_cast<size_t>(ids[t] * kVocab)];
      double mx = row[0], s = 0;
      for (int64_t j = 0; j < kVocab; ++j) mx = std::max(mx, static_cast<double>(row[j]));
      for (int64_t j = 0; j < kVocab; ++j) s += std::exp(row[j] - mx);
      nll -= row[ids[t + 1]] - mx - std::log(s);
      ++n;
    }
  return std::exp(nll / static_cast<double>(n));
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("eval: causal-LM logits are judged by perplexity ratio and next-token agreement; a damaged model fails") {
  mcc::test::TempDir tmp("mcc-eval-sequence");
  const fs::path ref = tmp.path / "ref.onnx", good = tmp.path / "good.onnx", bad = tmp.path / "bad.onnx";
  const auto ref_table = bigram_table(0, 0);
  save_table_model(ref_table, "logits", false, ref);
  save_table_model(bigram_table(0, 0.05f), "logits", false, good);
  save_table_model(bigram_table(1, 0), "logits", false, bad);  // every peak on the wrong next token
  const auto windows = save_windows(tmp.path / "text", false, false);

  // fp32 models: the fp32 budget (ratio <= 1.001, agreement >= 0.99) is for a runtime against
  // another; this "good" model is a changed one, judged as a quantized model would be.
  const std::vector<std::string> budget{"--max-perplexity-ratio", "1.05", "--min-token-agreement", "0.9"};
  auto eval = [&](const fs::path& model, std::vector<std::string> extra) {
    std::vector<std::string> args{"eval", model.string(), "--reference", ref.string(), "--inputs", (tmp.path / "text").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_mcc(args);
  };
  std::vector<std::string> with_report = budget;
  with_report.insert(with_report.end(), {"--report", (tmp.path / "g.json").string()});
  const auto g = eval(good, with_report);
  INFO(g.out << g.err);
  CHECK(g.code == 0);
  CHECK(contains(g.out, "logits perplexity_ratio "));
  CHECK(contains(g.out, "logits token_agreement 1 "));
  const json rep = json::parse(mcc::test::slurp(tmp.path / "g.json"));
  REQUIRE(rep["sequence"].size() == 3);
  CHECK(rep["sequence"][0]["metric"] == "perplexity_ratio");
  CHECK(rep["sequence"][0]["tokens"] == kWindows * (kSeq - 1));
  CHECK(rep["sequence"][0]["samples"] == kWindows);
  CHECK(rep["sequence"][0]["verdict"] == "pass");
  CHECK(rep["sequence"][0]["reference_perplexity"].get<double>() ==
        doctest::Approx(perplexity_by_hand(ref_table, windows)).epsilon(1e-5));
  CHECK(rep["passed"] == true);

  const auto b = eval(bad, budget);
  INFO(b.out << b.err);
  CHECK(b.code == 1);
  CHECK(contains(b.err, "token_agreement"));
  CHECK(contains(b.err, "fails"));
  CHECK(contains(b.out, "verdict: FAIL"));

  // Nothing to compare with: the model's own perplexity, as computed by hand from its table.
  const auto p = run_mcc({"eval", ref.string(), "--inputs", (tmp.path / "text").string(), "--metric", "perplexity", "--json"});
  INFO(p.out << p.err);
  CHECK(p.code == 0);
  const json pj = json::parse(p.out);
  REQUIRE(pj["sequence"].size() == 1);
  CHECK(pj["sequence"][0]["metric"] == "perplexity");
  CHECK(pj["sequence"][0]["value"].get<double>() == doctest::Approx(perplexity_by_hand(ref_table, windows)).epsilon(1e-5));
  CHECK(pj["sequence"][0]["verdict"] == "reported");

  // A budget the figure meets only by a hair, on one window: too few tokens to tell, which fails.
  const double ratio = rep["sequence"][0]["value"].get<double>();
  const auto u = eval(good, {"--samples", "1", "--min-token-agreement", "0.9", "--max-perplexity-ratio",
                             std::to_string(ratio * 1.0001)});
  INFO(u.out << u.err);
  CHECK(u.code == 1);
  CHECK(contains(u.err, "undecided, too few tokens to tell"));
  CHECK(contains(u.out, "UNDECIDED"));

  const auto bad_metric = run_mcc({"eval", good.string(), "--inputs", (tmp.path / "text").string(), "--metric", "nope:kl"});
  CHECK(bad_metric.code == 2);
  CHECK(contains(bad_metric.err, "no output 'nope'"));
}

TEST_CASE("eval and check: an encoder's padded positions (attention_mask 0) do not count") {
  mcc::test::TempDir tmp("mcc-eval-masked");
  const fs::path ref = tmp.path / "ref.onnx", model = tmp.path / "model.onnx";
  auto table = bigram_table(0, 0);
  save_table_model(table, "last_hidden_state", true, ref);
  for (int64_t j = 0; j < kVocab; ++j) table[static_cast<size_t>(j)] += 10.0f;  // only the pad token's row differs
  save_table_model(table, "last_hidden_state", true, model);
  save_windows(tmp.path / "padded", true, true);
  save_windows(tmp.path / "unpadded", true, false);  // the same ids, no mask file: every position counts

  const auto m = run_mcc({"eval", model.string(), "--reference", ref.string(), "--inputs", (tmp.path / "padded").string(),
                          "--json"});
  INFO(m.out << m.err);
  CHECK(m.code == 0);
  const json mj = json::parse(m.out);
  REQUIRE(mj["outputs"].size() == 1);
  CHECK(mj["outputs"][0]["masked"]["positions_compared"] == kWindows * (kSeq - 8));
  CHECK(mj["outputs"][0]["masked"]["positions"] == kWindows * kSeq);
  CHECK(mj["outputs"][0]["min_cosine"].get<double>() > 0.999999);
  // Its unmasked rows are positions by features, not class scores: no top-1 figure or verdict.
  CHECK_FALSE(mj["outputs"][0].contains("top1_agreement"));
}

TEST_CASE("check stage: causal-LM logits get token figures with their intervals; a missed budget fails the run") {
  mcc::test::TempDir tmp("mcc-check-sequence");
  const fs::path ref = tmp.path / "ref.onnx";
  save_table_model(bigram_table(0, 0), "logits", false, ref);
  save_windows(tmp.path / "text", false, false);
  const std::string data = (tmp.path / "text").string();
  const auto c = run_mcc({"convert", ref.string(), "-o", (tmp.path / "h.onnx").string(), "-p", "fp16,check{data=" + data + "}"});
  INFO(c.out << c.err);
  CHECK(c.code == 0);
  CHECK(contains(c.out, "check: output 'logits' perplexity_ratio 1"));  // fp16 rounding of the table: 1.00001
  // An fp16 pipeline is held to fp16's token budget (perplexity ratio <= 1.01, agreement >= 0.95).
  CHECK(contains(c.out, "<= 1.01 on 186 tokens of 6 sample(s): PASS"));
  CHECK(contains(c.out, "check: output 'logits' token_agreement 1 [0.979765, 1] >= 0.95 on 186 tokens of 6 sample(s): PASS"));
  const json state = json::parse(mcc::test::slurp(tmp.path / "h.mcc.json"));
  REQUIRE(state["checks"].size() == 3);
  CHECK(state["checks"][1]["metric"] == "token_agreement");
  CHECK(state["checks"][1]["value"] == 1.0);
  CHECK(state["checks"][1]["interval"].size() == 2);

  const auto f = run_mcc({"convert", ref.string(), "-o", (tmp.path / "f.onnx").string(), "-p",
                          "fp16,check{data=" + data + " max_perplexity_ratio=0.5}"});
  INFO(f.out << f.err);
  CHECK(f.code == 1);
  CHECK(contains(f.err, "perplexity_ratio"));
  CHECK_FALSE(fs::exists(tmp.path / "f.onnx"));
}
