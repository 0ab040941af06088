// fold: the parameter-folding stage. Composes the fold sub-steps (each in its own file, each with
// its own header comment) and repeats them until a round changes nothing:
//
//   fold_constants      constant nodes -> initializers; constant subgraphs evaluated with the cpu kernels
//   eliminate_identity  Identity, inference Dropout, no-op Cast/Reshape/Transpose removed
//   fold_shapes         Shape/Size/Gather-on-Shape -> constants where static shapes are known
//   fold_batch_norm     BatchNormalization -> Conv/ConvTranspose/Gemm/MatMul weights
//   fold_mul_add        Mul/Div/Add/Sub by per-channel constants -> Conv/ConvTranspose/Gemm weights
//   eliminate_dead_code unused nodes and initializers removed
//
// Before:  y = Relu(BatchNormalization(Conv(x, W, B), s, b, m, v))    (+ Shape/Gather/Reshape chains)
// After:   y = Relu(Conv(x, W', B'))
// Graph input and output names never change; every sub-step keeps the numerics (fp32
// tolerance; see each file for its formula and numerical notes). Inside If/Loop/Scan bodies too
// unless subgraphs=false. The record lists, per sub-step, the nodes it folded or removed.
// Does not apply when: see each sub-step.
// Numerical notes: BN and Mul/Add folds compute in f64 and round once to the weight's dtype;
//   constant folding runs the same kernels as the cpu backend.
#include "transforms/fold/fold.h"

#include <spdlog/spdlog.h>

namespace mcc::transforms::fold {

namespace {
constexpr int kMaxRounds = 8;
}  // namespace

const PassInfo& FoldPass::info() const {
  static const PassInfo kInfo{
      "fold",
      "Parameter folding: constants, BatchNorm and Mul/Add into weights, Identity/Dropout, static shapes, dead code",
      {
          {"constant_size_limit", OptionType::Int, "67108864",
           "Largest result in bytes a constant fold may create (bigger ones are left to run time)", {}},
          {"subgraphs", OptionType::Bool, "true", "Also fold inside If/Loop/Scan bodies", {}},
          {"constants", OptionType::Bool, "true", "Evaluate constant nodes with the cpu kernels", {}},
          {"batch_norm", OptionType::Bool, "true", "Fold BatchNormalization into Conv/ConvTranspose/Gemm/MatMul", {}},
          {"mul_add", OptionType::Bool, "true", "Fold per-channel Mul/Div/Add/Sub into Conv/ConvTranspose/Gemm", {}},
          {"identity", OptionType::Bool, "true", "Remove Identity, inference Dropout and no-op Cast/Reshape/Transpose", {}},
          {"shapes", OptionType::Bool, "true", "Fold Shape/Size/Gather-on-Shape where static shapes are known", {}},
          {"dead_code", OptionType::Bool, "true", "Remove unused nodes and initializers", {}},
      }};
  return kInfo;
}

PassResult FoldPass::run(ir::Model& model, PassContext& ctx) {
  const Options& o = ctx.options;
  FoldConfig cfg;
  cfg.constant_size_limit = o.get_int("constant_size_limit");
  if (cfg.constant_size_limit < 0) throw UsageError("fold: constant_size_limit must be >= 0");
  cfg.subgraphs = o.get_bool("subgraphs");
  cfg.threads = ctx.threads;
  using Step = int64_t (*)(ir::Model&, const FoldConfig&, RewriteLog&);
  std::vector<Step> steps;
  if (o.get_bool("constants")) steps.push_back(fold_constants);
  if (o.get_bool("identity")) steps.push_back(eliminate_identity);
  if (o.get_bool("shapes")) steps.push_back(fold_shapes);
  if (o.get_bool("batch_norm")) steps.push_back(fold_batch_norm);
  if (o.get_bool("mul_add")) steps.push_back(fold_mul_add);
  if (o.get_bool("dead_code")) steps.push_back(eliminate_dead_code);

  RewriteLog log;
  for (const char* k : {"constants_folded", "constant_nodes_to_initializers", "identities_removed", "shapes_folded",
                        "batch_norms_folded", "mul_add_folded", "dead_nodes_removed", "initializers_removed"})
    log.declare(k);
  const int64_t nodes_before = ir::count_nodes(*model.graph);
  const int64_t bytes_before = ir::count_initializer_bytes(*model.graph);
  int64_t changes = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    int64_t changed = 0;
    for (Step s : steps) changed += s(model, cfg, log);
    changes += changed;
    if (changed == 0) break;
    if (round + 1 == kMaxRounds) spdlog::debug("fold: still changing after {} rounds; stopping", kMaxRounds);
  }
  PassResult r;
  r.modified = changes > 0;
  r.stats = log.stats();
  r.stats["nodes_before"] = nodes_before;
  r.stats["nodes_after"] = ir::count_nodes(*model.graph);
  r.stats["initializer_bytes_before"] = bytes_before;
  r.stats["initializer_bytes_after"] = ir::count_initializer_bytes(*model.graph);
  r.record = log.record();
  return r;
}

std::unique_ptr<Pass> make_pass() { return std::make_unique<FoldPass>(); }

}  // namespace mcc::transforms::fold
