// Helper for the fp16 stage tests: one run of the pass (replaying `replay` when given).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "transforms/fp16/fp16.h"

namespace mcc::test {

inline transforms::PassResult run_fp16(ir::Model& m, std::vector<std::pair<std::string, std::string>> opts = {},
                                       const nlohmann::ordered_json* replay = nullptr) {
  auto pass = transforms::fp16::make_pass();
  transforms::Options o(pass->info(), std::move(opts));
  transforms::PassContext ctx{o, "fp16", replay, "", 1};
  return pass->run(m, ctx);
}

}  // namespace mcc::test
