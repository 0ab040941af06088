// Helpers for the quantize tests: a calibration folder of random samples and one run of the pass.
#pragma once
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ir/npy.h"
#include "support/paths.h"
#include "support/graph_builder.h"
#include "transforms/quantize/quantize.h"

namespace mcc::test {

/// A calibration folder of `n` NumPy samples in [0, 1] of shape `dims`, one subfolder per sample,
/// each holding `X.npy` (the graph input's name).
struct CalibDir {
  TempDir dir{"mcc-calib"};
  CalibDir(const std::vector<int64_t>& dims, int n, uint32_t seed) {
    for (int i = 0; i < n; ++i) {
      const std::filesystem::path sample = dir.path / ("s" + std::to_string(i));
      std::filesystem::create_directories(sample);
      ir::save_npy(random_tensor(dims, seed + i, 0.f, 1.f), (sample / "X.npy").string());
    }
  }
  std::string path() const { return dir.path.string(); }
};

/// Cosine similarity of two float32 tensors of equal size.
inline double cosine(const ir::Tensor& a, const ir::Tensor& b) {
  double ab = 0, aa = 0, bb = 0;
  auto x = a.data<float>(), y = b.data<float>();
  for (size_t i = 0; i < x.size(); ++i) ab += double(x[i]) * y[i], aa += double(x[i]) * x[i], bb += double(y[i]) * y[i];
  return ab / std::sqrt(aa * bb);
}

/// Runs the quantize pass with `opts`, replaying `replay` when given. Without a `target` option it
/// runs target=generic, the layout these tests describe (tests/transforms/quantize/target_test.cpp
/// covers the others).
inline transforms::PassResult run_quantize(ir::Model& m, std::vector<std::pair<std::string, std::string>> opts,
                                           const nlohmann::ordered_json* replay = nullptr) {
  bool has_target = false;
  for (const auto& [key, value] : opts) has_target = has_target || key == "target";
  if (!has_target) opts.emplace_back("target", "generic");
  auto pass = transforms::quantize::make_pass();
  transforms::Options o(pass->info(), std::move(opts));
  transforms::PassContext ctx{o, "quantize", replay, ".", 1, ""};
  return pass->run(m, ctx);
}

}  // namespace mcc::test
