// Output agreement between a model and its reference (see agreement.h).
#include "judge/agreement.h"

#include <algorithm>
#include <optional>

#include "backends/executor.h"
#include "ir/decoder_feeds.h"
#include "ir/errors.h"
#include "ir/free_memory.h"
#include "ir/sample_data.h"
#include "judge/probability_outputs.h"
#include "judge/reference_outputs.h"

namespace mcc::judge {
namespace {

using Feeds = std::vector<std::pair<std::string, backends::RValue>>;

Feeds feeds_of(const ir::Graph& g, const std::string& dir, SequenceFeeds& seq) {
  ir::BoundSample s = ir::bind_sample(g, ir::load_sample(dir, false));
  seq = sequence_feeds(s.feeds);
  Feeds f;
  for (auto& [name, t] : s.feeds) f.emplace_back(name, backends::RValue::of(std::move(t)));
  return f;
}

bool measurable(const backends::RValue& v) {
  return v.kind == backends::RValue::Kind::Tensor && v.tensor.defined() && v.tensor.dtype() == ir::DType::F32;
}

void add_sample(OutputAgreement& a, const backends::RValue& got, const backends::RValue& want,
                const std::optional<int64_t> label, const SequenceFeeds& seq) {
  if (!a.skipped.empty()) return;
  if (!measurable(got) || !measurable(want)) {
    a.skipped = "not a float32 tensor";
    return;
  }
  if (a.lm || (a.stats.samples == 0 && is_lm_logits(a.stats.name, got.tensor, seq, false))) {
    if (!is_lm_logits(a.stats.name, got.tensor, seq, true))
      throw ModelError("output '" + a.stats.name + "': causal-LM logits in one sample, not in another");
    a.lm = true;
    a.sequence.add(a.stats.name, got.tensor, want.tensor, seq);
  }
  const bool masked = !a.lm && is_masked(got.tensor, seq) && got.tensor.dims() == want.tensor.dims();
  if (masked) {
    const auto [kept, all] = mask_counts(seq.mask);
    a.positions_kept += kept;
    a.positions_all += all;
  }
  auto m = masked ? backends::compare_tensors(unmasked_rows(got.tensor, seq.mask), unmasked_rows(want.tensor, seq.mask),
                                              backends::Tolerance{})
                  : backends::compare_tensors(got.tensor, want.tensor, backends::Tolerance{});
  // The unmasked rows of an encoder's hidden state are [positions, features]: not class scores,
  // so no top-1 verdict (the argmax of a feature row means nothing).
  if (masked) m.top1_agree.reset();
  if (!m.comparable) throw ModelError("output '" + a.stats.name + "': " + m.mismatch + " against the reference");
  if (a.probability && !masked && nothing_in_both(got.tensor, want.tensor)) count_as_agreeing(m, a.stats);
  a.stats.add(m);
  if (!label || !m.top1_agree) return;
  const auto got_class = backends::top1_class(got.tensor), want_class = backends::top1_class(want.tensor);
  if (!got_class || !want_class) return;
  a.labelled = true;
  a.top1_correct += *got_class == *label ? 1 : 0;
  a.reference_top1_correct += *want_class == *label ? 1 : 0;
}

}  // namespace

std::vector<OutputAgreement> measure_agreement(const ir::Model& model, ir::Model reference, const AgreementInput& in) {
  const ir::Graph& g = *model.graph;
  if (g.outputs.size() != reference.graph->outputs.size())
    throw ModelError("the model has " + std::to_string(g.outputs.size()) + " outputs, its reference " +
                     std::to_string(reference.graph->outputs.size()));
  backends::ExecOptions eo;
  eo.threads = in.threads;
  // Both models' weights are held while the reference runs: no second copy of them for speed
  // when they are large (the reference is the float model).
  eo.keep_weight_copies = !backends::lean_weight_copies(reference);
  const std::vector<bool> probability = probability_outputs(*reference.graph);
  // The reference runs first, over every sample; its weights are dropped before the model runs.
  ReferenceOutputs wants;
  {
    backends::Executor ref_exec(reference, eo);
    for (const std::string& dir : in.sample_dirs) {
      SequenceFeeds seq;
      wants.add(ref_exec.run(feeds_of(g, dir, seq)));
    }
  }
  { const ir::Model dropped = std::move(reference); }
  ir::release_free_memory();
  backends::Executor exec(model, eo);
  std::vector<OutputAgreement> out(g.outputs.size());
  for (size_t k = 0; k < out.size(); ++k) {
    out[k].stats.name = g.outputs[k]->name;
    out[k].probability = probability[k];
  }
  // A KV-cache decoder's present.* outputs are the cache the next step reads: how much the
  // compression moved them shows in that step's logits, not in a cosine of its own (int4 weights
  // leave the value cache at cosine 0.83-0.99 with the logits' perplexity ratio at 1.05).
  if (std::any_of(g.inputs.begin(), g.inputs.end(), [](const ir::Value* v) { return ir::is_past_cache_input(*v); }))
    for (auto& a : out)
      if (a.stats.name.find("present") != std::string::npos) a.skipped = "KV-cache output (judged through the logits)";
  for (size_t i = 0; i < in.sample_dirs.size(); ++i) {
    SequenceFeeds seq;
    Feeds f = feeds_of(g, in.sample_dirs[i], seq);
    const auto want = wants.take(i);
    const auto got = exec.run(std::move(f));
    // Labels score the first class-score output only (a model's prediction).
    bool labelled_one = false;
    for (size_t k = 0; k < out.size(); ++k) {
      std::optional<int64_t> label;
      if (!in.labels.empty() && !labelled_one && (out[k].stats.samples == 0 || out[k].stats.class_scores()))
        label = in.labels[i];
      add_sample(out[k], got[k], want[k], label, seq);
      labelled_one = labelled_one || out[k].labelled;
    }
  }
  return out;
}

}  // namespace mcc::judge
