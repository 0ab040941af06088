// Sequence judging: perplexity, next-token agreement and KL of causal-LM logits against the
// sample's own token ids, masked positions left out, and the intervals and three-way decisions
// the verdicts rest on.
#include <doctest/doctest.h>

#include <cmath>

#include "ir/errors.h"
#include "judge/interval.h"
#include "judge/sequence_figures.h"
#include "judge/sequence_metrics.h"

using namespace mcc;
using judge::SequenceFeeds;
using judge::SequenceStats;

namespace {

ir::Tensor ids_tensor(std::vector<int64_t> ids) {
  const int64_t t = static_cast<int64_t>(ids.size());
  return ir::Tensor::from_vector<int64_t>({1, t}, ids);
}

/// Logits [1, T, V]: every row puts `hi` on `pick[t]` and 0 elsewhere.
ir::Tensor peaked_logits(const std::vector<int64_t>& pick, int64_t v, float hi) {
  const int64_t t = static_cast<int64_t>(pick.size());
  std::vector<float> x(static_cast<size_t>(t * v), 0.0f);
  for (int64_t i = 0; i < t; ++i) x[static_cast<size_t>(i * v + pick[static_cast<size_t>(i)])] = hi;
  return ir::Tensor::from_vector<float>({1, t, v}, x);
}

/// The interval of a mean over one value: unbounded both ways.
judge::Interval m1_interval() {
  judge::MeanAccumulator one;
  one.add(0.5);
  return one.interval();
}

}  // namespace

TEST_CASE("sequence metrics: perplexity of uniform logits is the vocabulary size; a window of T scores T - 1 tokens") {
  SequenceFeeds f;
  f.ids = ids_tensor({1, 2, 3, 0, 4});
  const ir::Tensor uniform = ir::Tensor::from_vector<float>({1, 5, 8}, std::vector<float>(40, 0.5f));
  SequenceStats s;
  s.add("logits", uniform, ir::Tensor(), f);
  CHECK(s.tokens() == 4);
  CHECK(s.samples() == 1);
  CHECK_FALSE(s.has_reference());
  CHECK(s.perplexity() == doctest::Approx(8.0).epsilon(1e-12));
}

TEST_CASE("sequence metrics: NLL of the next token, the ratio to a reference, agreement and KL") {
  // Row t predicts token t + 1; the model puts logit 2 on the right next token at every position,
  // the reference logit 4. V = 4: p = e^h / (e^h + 3).
  const std::vector<int64_t> ids{0, 1, 2, 3, 0, 1};
  SequenceFeeds f;
  f.ids = ids_tensor(ids);
  std::vector<int64_t> next(ids.begin() + 1, ids.end());
  next.push_back(0);
  SequenceStats s;
  s.add("logits", peaked_logits(next, 4, 2.0f), peaked_logits(next, 4, 4.0f), f);
  const double nll = -std::log(std::exp(2.0) / (std::exp(2.0) + 3)), ref = -std::log(std::exp(4.0) / (std::exp(4.0) + 3));
  CHECK(s.tokens() == 5);
  CHECK(s.perplexity() == doctest::Approx(std::exp(nll)));
  CHECK(s.reference_perplexity() == doctest::Approx(std::exp(ref)));
  CHECK(s.perplexity_ratio() == doctest::Approx(std::exp(nll - ref)));
  CHECK(s.token_agreement() == 1.0);
  CHECK(s.kl_mean() > 0);
  // Every token the same: no spread, the interval is the value.
  CHECK(s.perplexity_ratio_interval().lo == doctest::Approx(s.perplexity_ratio()));

  // A model that always picks the wrong next token disagrees everywhere and fails any budget.
  std::vector<int64_t> wrong(next.size());
  for (size_t i = 0; i < next.size(); ++i) wrong[i] = (next[i] + 2) % 4;
  SequenceStats w;
  w.add("logits", peaked_logits(wrong, 4, 6.0f), peaked_logits(next, 4, 4.0f), f);
  CHECK(w.token_agreement() == 0.0);
  CHECK(w.perplexity_ratio() > 10);
  const auto figures = judge::sequence_figures("logits", w, judge::default_sequence_budget("int8"));
  REQUIRE(figures.size() == 3);
  CHECK(figures[0]["metric"] == "perplexity_ratio");
  CHECK(figures[0]["verdict"] == "fail");
  CHECK(figures[1]["metric"] == "token_agreement");
  CHECK(figures[1]["verdict"] == "fail");
  CHECK(figures[2]["verdict"] == "reported");  // kl is judged only when asked for
  CHECK(figures[0]["tokens"] == 5);
}

TEST_CASE("sequence metrics: masked positions are not scored, and masked rows are dropped before comparing") {
  SequenceFeeds f;
  f.ids = ids_tensor({5, 1, 2, 0, 0});
  f.mask = ir::Tensor::from_vector<int64_t>({1, 5}, {1, 1, 1, 0, 0});
  const ir::Tensor uniform = ir::Tensor::from_vector<float>({1, 5, 8}, std::vector<float>(40, 0.f));
  SequenceStats s;
  s.add("logits", uniform, uniform, f);
  CHECK(s.tokens() == 2);  // 5 -> 1 and 1 -> 2; 2 -> pad and pad -> pad are masked

  const ir::Tensor hidden = ir::Tensor::from_vector<float>({1, 5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(judge::is_masked(hidden, f));
  const ir::Tensor kept = judge::unmasked_rows(hidden, f.mask);
  CHECK(kept.dims() == std::vector<int64_t>{3, 2});
  CHECK(kept.data<float>()[5] == 6.f);
  CHECK(judge::mask_counts(f.mask) == std::pair<int64_t, int64_t>{3, 5});
  SequenceFeeds all = f;
  all.mask = ir::Tensor::from_vector<int64_t>({1, 5}, {1, 1, 1, 1, 1});
  CHECK_FALSE(judge::is_masked(hidden, all));  // nothing hidden: compared as it is
}

TEST_CASE("sequence metrics: which outputs are causal-LM logits") {
  SequenceFeeds f;
  f.ids = ids_tensor({3, 1, 2});
  const ir::Tensor logits = ir::Tensor::from_vector<float>({1, 3, 4}, std::vector<float>(12, 0.f));
  CHECK(judge::is_lm_logits("logits", logits, f, false));
  CHECK(judge::is_lm_logits("lm_Logits_0", logits, f, false));
  CHECK_FALSE(judge::is_lm_logits("last_hidden_state", logits, f, false));  // by name only when asked for
  CHECK(judge::is_lm_logits("last_hidden_state", logits, f, true));
  const ir::Tensor narrow = ir::Tensor::from_vector<float>({1, 3, 3}, std::vector<float>(9, 0.f));
  CHECK_FALSE(judge::is_lm_logits("logits", narrow, f, true));  // id 3 is outside a vocabulary of 3
  const ir::Tensor other_t = ir::Tensor::from_vector<float>({1, 2, 4}, std::vector<float>(8, 0.f));
  CHECK_FALSE(judge::is_lm_logits("logits", other_t, f, true));
  CHECK_FALSE(judge::is_lm_logits("logits", logits, SequenceFeeds{}, true));  // no input_ids

  const std::vector<std::pair<std::string, ir::Tensor>> feeds{
      {"input_ids", f.ids}, {"attention_mask", ir::Tensor::from_vector<int64_t>({1, 3}, {1, 1, 0})}};
  const SequenceFeeds found = judge::sequence_feeds(feeds);
  CHECK(found.ids.defined());
  CHECK(found.mask.defined());
  const std::vector<std::pair<std::string, ir::Tensor>> mismatched{
      {"input_ids", f.ids}, {"attention_mask", ir::Tensor::from_vector<int64_t>({1, 2}, {1, 1})}};
  CHECK_FALSE(judge::sequence_feeds(mismatched).mask.defined());

  SequenceStats s;
  CHECK_THROWS_AS(s.add("logits", logits, narrow, f), ModelError);
}

TEST_CASE("intervals: Wilson for shares, mean +- 1.96 sd / sqrt(n), and the three-way decision") {
  const auto w = judge::share_interval(20, 20);
  CHECK(w.lo == doctest::Approx(0.838875).epsilon(1e-5));
  CHECK(w.hi == 1.0);
  const auto w500 = judge::share_interval(500, 500);
  CHECK(w500.lo == doctest::Approx(0.992376).epsilon(1e-5));
  const auto half = judge::share_interval(50, 100);
  CHECK(half.lo == doctest::Approx(0.4038).epsilon(1e-3));
  CHECK(half.hi == doctest::Approx(0.5962).epsilon(1e-3));

  judge::MeanAccumulator m;
  m.add(1.0);
  CHECK(std::isinf(m.interval().lo));  // one value: no spread to measure
  m.add(3.0);
  CHECK(m.mean() == 2.0);
  CHECK(m.interval().lo == doctest::Approx(2.0 - 1.959964 * std::sqrt(2.0 / 2.0)));

  CHECK(judge::decide(0.995, {0.992, 0.998}, 0.99, true) == "pass");
  CHECK(judge::decide(1.0, w, 0.99, true) == "undecided");
  CHECK(judge::decide(0.98, {0.97, 0.995}, 0.99, true) == "fail");
  CHECK(judge::decide(1.05, {1.02, 1.08}, 1.1, false) == "pass");
  CHECK(judge::decide(1.05, {1.02, 1.2}, 1.1, false) == "undecided");
  CHECK(judge::decide(std::nan(""), {0, 1}, 0.5, true) == "fail");

  // Reports hold an unbounded end as null and print it as -inf / inf.
  const auto pair = judge::interval_json(m1_interval());
  CHECK(pair[0].is_null());
  CHECK(pair[1].is_null());
  CHECK(judge::interval_text(pair) == "[-inf, inf]");
  CHECK(judge::interval_text(judge::interval_json(w)) == "[0.838875, 1]");
}
