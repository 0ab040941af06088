// The `fold` stage and its sub-steps. Each sub-step lives in its own file and can be run (and
// tested) alone; fold.cpp composes them into the user-facing stage and iterates them until the
// model stops changing. Every sub-step works in If/Loop/Scan bodies too, never renames a graph
// input or output, and keeps the model's numerics (fp32 tolerance).
#pragma once
#include <cstdint>
#include <memory>

#include "ir/graph.h"
#include "transforms/pipeline/pass.h"
#include "transforms/common/rewrite.h"

namespace mcc::transforms::fold {

struct FoldConfig {
  /// Largest folded result, in bytes, a constant folding may create (all outputs of one node).
  int64_t constant_size_limit = int64_t{64} << 20;
  /// Also fold inside If/Loop/Scan bodies.
  bool subgraphs = true;
  /// Threads for the kernels that constant folding executes (0 = all cores).
  int threads = 0;
};

// Each returns the number of changes it made and logs them (stats + node names) into `log`.
int64_t fold_constants(ir::Model& m, const FoldConfig& cfg, RewriteLog& log);
int64_t fold_batch_norm(ir::Model& m, const FoldConfig& cfg, RewriteLog& log);
int64_t fold_mul_add(ir::Model& m, const FoldConfig& cfg, RewriteLog& log);
int64_t eliminate_identity(ir::Model& m, const FoldConfig& cfg, RewriteLog& log);
int64_t fold_shapes(ir::Model& m, const FoldConfig& cfg, RewriteLog& log);
int64_t eliminate_dead_code(ir::Model& m, const FoldConfig& cfg, RewriteLog& log);

/// The `fold` stage: all of the above, to a fixpoint.
class FoldPass : public Pass {
 public:
  const PassInfo& info() const override;
  PassResult run(ir::Model& model, PassContext& ctx) override;
};
std::unique_ptr<Pass> make_pass();

}  // namespace mcc::transforms::fold
