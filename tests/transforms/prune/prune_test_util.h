// Test support for the prune stage: run it with options (and a record to replay), zero chosen
// channels of a weight before pruning (so removing them must leave the outputs unchanged), and
// read initializer dims.
#pragma once
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/onnx_io.h"
#include "support/paths.h"
#include "support/graph_builder.h"
#include "transforms/prune/prune.h"

namespace mcc::test {

inline transforms::PassResult run_prune(ir::Model& m, std::vector<std::pair<std::string, std::string>> opts,
                                        const nlohmann::ordered_json* replay = nullptr) {
  auto pass = transforms::prune::make_pass();
  transforms::Options o(pass->info(), std::move(opts));
  transforms::PassContext ctx{o, "prune", replay, ".", 1};
  return pass->run(m, ctx);
}

/// Sets the slices `channels` of initializer `name` along `axis` to zero.
inline void zero_channels(ir::Graph& g, const std::string& name, int axis, const std::vector<int64_t>& channels) {
  ir::Value* v = g.find_value(name);
  if (!v || !v->initializer) throw InternalError("zero_channels: no initializer '" + name + "'");
  ir::Tensor t = v->initializer->clone();
  const auto& d = t.dims();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= d[i];
  for (size_t i = axis + 1; i < d.size(); ++i) inner *= d[i];
  auto data = t.mutable_data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c : channels)
      for (int64_t i = 0; i < inner; ++i) data[static_cast<size_t>((o * d[axis] + c) * inner + i)] = 0.f;
  v->initializer = std::move(t);
}

inline std::vector<int64_t> dims_of(const ir::Graph& g, const ir::Node& n, size_t input) {
  const ir::Value* v = n.input(input);
  return v && v->initializer ? v->initializer->dims() : std::vector<int64_t>{};
}

inline ir::Node* node_named(const ir::Graph& g, const std::string& name) {
  for (ir::Node* n : g.nodes())
    if (n->name == name) return n;
  return nullptr;
}

inline int64_t count_zeros(const ir::Tensor& t) {
  int64_t z = 0;
  for (float x : t.data<float>()) z += x == 0.f;
  return z;
}

inline bool have_python_ort() {
  static const bool ok = std::system("python3 -c 'import onnxruntime, onnx, numpy' > /dev/null 2>&1") == 0;
  return ok;
}

/// Runs tests/transforms/prune/prune_ort_check.py on the two models (saved to `dir`); its exit code.
inline int ort_check(const ir::Model& original, const ir::Model& pruned, const std::filesystem::path& dir,
                     double atol = 1e-5) {
  const auto a = dir / "original.onnx", b = dir / "pruned.onnx";
  ir::save_model(original, a.string());
  ir::save_model(pruned, b.string());
  const std::string cmd = "python3 '" + (source_dir() / "tests" / "transforms" / "prune" / "prune_ort_check.py").string() +
                          "' '" + a.string() + "' '" + b.string() + "' --atol " + std::to_string(atol);
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

}  // namespace mcc::test
