// Probability outputs and samples where both models see nothing (see probability_outputs.h).
#include "judge/probability_outputs.h"

#include <limits>

#include "judge/passthrough_ops.h"

namespace mcc::judge {
namespace {

bool below_limit(const ir::Tensor& t) {
  const auto limit = static_cast<float>(kNothingProbability);  // a float32 output's 0.01 reaches it
  for (const float v : t.data<float>())
    if (!(v >= 0.0f && v < limit)) return false;  // NaN fails too
  return true;
}

}  // namespace

std::vector<bool> probability_outputs(const ir::Graph& g) {
  std::vector<bool> out;
  for (const ir::Value* v : g.outputs) {
    const ir::Node* n = v ? v->producer : nullptr;
    while (n && is_passthrough(*n) && n->input(0)) n = n->input(0)->producer;
    out.push_back(n && n->is("Sigmoid"));
  }
  return out;
}

bool nothing_in_both(const ir::Tensor& got, const ir::Tensor& want) {
  if (!got.defined() || !want.defined() || got.dtype() != ir::DType::F32 || want.dtype() != ir::DType::F32) return false;
  if (got.numel() != want.numel() || got.numel() == 0) return false;
  return below_limit(got) && below_limit(want);
}

void count_as_agreeing(backends::TensorMetrics& m, OutputStats& stats) {
  m.cosine = 1;
  m.snr_db = std::numeric_limits<double>::infinity();
  ++stats.nothing_samples;
}

}  // namespace mcc::judge
