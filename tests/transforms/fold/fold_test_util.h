// Test support for the fold stage and its sub-steps: run the whole stage or one step on a model
// built with support/graph_builder.h.
#pragma once
#include "support/graph_builder.h"
#include "transforms/fold/fold.h"

namespace mcc::test {

/// Runs the whole fold stage with option overrides ("key", "value").
inline transforms::PassResult run_fold(ir::Model& m, std::vector<std::pair<std::string, std::string>> opts = {}) {
  transforms::fold::FoldPass pass;
  transforms::Options o(pass.info(), std::move(opts));
  transforms::PassContext ctx{o, "fold", nullptr, ".", 1};
  return pass.run(m, ctx);
}

/// Runs one sub-step; returns the number of changes.
using FoldStep = int64_t (*)(ir::Model&, const transforms::fold::FoldConfig&, transforms::RewriteLog&);
inline int64_t run_step(ir::Model& m, FoldStep step, transforms::fold::FoldConfig cfg = {}) {
  transforms::RewriteLog log;
  cfg.threads = 1;
  return step(m, cfg, log);
}

}  // namespace mcc::test
