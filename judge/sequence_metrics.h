// Judging sequence outputs by what they mean, not element by element.
//   Causal-LM logits [B, T, V] (an output whose name holds "logits", or one chosen with
//   `--metric perplexity`), fed token ids `input_ids` [B, T]: position t predicts token t + 1, so
//   each window scores T - 1 tokens. Per token: the model's negative log-likelihood of the next
//   token and, with a reference, the reference's, whether both pick the same top-1 next token, and
//   KL(reference || model) of the two next-token distributions. Figures: perplexity
//   exp(mean NLL), the perplexity ratio to the reference exp(mean(NLL - NLL_ref)) with its 95 %
//   interval, the top-1 next-token agreement (Wilson interval) and the mean KL.
//   Padded inputs: positions where `attention_mask` [B, T] is 0 do not count (a token is scored
//   only when it and the position predicting it are both unmasked); for other outputs of shape
//   [B, T, ...] (an encoder's hidden states) the masked positions are dropped before comparing.
// Does not apply to outputs without a token axis matching input_ids, or to models without an
// input named input_ids (a mask alone still masks outputs shaped [B, T, ...]).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "judge/interval.h"

namespace mcc::judge {

/// The token ids and attention mask a sample feeds (inputs named input_ids and attention_mask);
/// undefined tensors when absent.
struct SequenceFeeds {
  ir::Tensor ids, mask;
};
SequenceFeeds sequence_feeds(const std::vector<std::pair<std::string, ir::Tensor>>& feeds);

/// Whether `out` is causal-LM logits for these feeds: float32 [B, T, V] with [B, T] the ids'
/// shape, every id in [0, V), and the output named "*logits*" unless `forced`.
bool is_lm_logits(const std::string& output, const ir::Tensor& out, const SequenceFeeds& f, bool forced);
/// Whether `out` is shaped [B, T, ...] like the attention mask and the mask hides some position.
bool is_masked(const ir::Tensor& out, const SequenceFeeds& f);
/// The rows of `x` ([B, T, ...]) whose mask is not 0, as [rows, ...].
ir::Tensor unmasked_rows(const ir::Tensor& x, const ir::Tensor& mask);
/// Positions kept and in all, of a mask.
std::pair<int64_t, int64_t> mask_counts(const ir::Tensor& mask);

/// Token figures of one LM output over samples.
class SequenceStats {
 public:
  /// Scores one sample's logits (and the reference's when `ref` is defined; same shape).
  /// Throws ModelError naming the output when shapes disagree.
  void add(const std::string& output, const ir::Tensor& logits, const ir::Tensor& ref, const SequenceFeeds& f);

  int samples() const { return samples_; }
  int64_t tokens() const { return nll_.n; }
  bool has_reference() const { return diff_.n > 0; }
  double perplexity() const;
  Interval perplexity_interval() const;
  double reference_perplexity() const;
  double perplexity_ratio() const;
  Interval perplexity_ratio_interval() const;
  double token_agreement() const;
  Interval token_agreement_interval() const;
  double kl_mean() const { return kl_.mean(); }
  Interval kl_interval() const { return kl_.interval(); }

 private:
  int samples_ = 0;
  MeanAccumulator nll_, ref_nll_, diff_, kl_;
  int64_t agree_ = 0;
};

}  // namespace mcc::judge
