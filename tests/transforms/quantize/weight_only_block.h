// A block for the weight-only quantization tests (tests/transforms/quantize/weight_only_test.cpp,
// tests/cli/quantize_weight_only_test.cpp), opset 17, whose second MatMul reads strongly
// correlated inputs (a rank-16 mix of the input), the case where GPTQ gains over rounding:
//
//   h  = MatMul(x[1, 32, 16], M[16, 64])     "mix"
//   r  = Relu(h)                             "relu"
//   Y  = MatMul(r, W[64, 40])                "proj"      (K = 64: 4 blocks of 16, 2 of 32)
//   Z  = Gemm(z[4, 16], G[16, 8])            "fc"        (Gemm: not quantized by weight_only)
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ir/npy.h"
#include "support/graph_builder.h"
#include "support/paths.h"

namespace mcc::test {

inline ir::Model weight_only_block() {
  ir::Model m = empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "x", {1, 32, 16});
  ir::Value& z = add_input(g, "z", {4, 16});
  auto& mix = add_node(g, "MatMul", "mix", {&x, &add_random_init(g, "M", {16, 64}, 301)}, {"h"}, 17);
  auto& relu = add_node(g, "Relu", "relu", {mix.outputs[0]}, {"r"}, 17);
  auto& proj = add_node(g, "MatMul", "proj", {relu.outputs[0], &add_random_init(g, "W", {64, 40}, 302)}, {"Y"}, 17);
  auto& fc = add_node(g, "Gemm", "fc", {&z, &add_random_init(g, "G", {16, 8}, 303)}, {"Z"}, 17);
  // Declared output types and shapes, as a framework exports them (onnx.checker's full_check needs them).
  proj.outputs[0]->dtype = fc.outputs[0]->dtype = ir::DType::F32;
  proj.outputs[0]->shape = ir::Shape::of({1, 32, 40});
  fc.outputs[0]->shape = ir::Shape::of({4, 8});
  mark_output(g, *proj.outputs[0]);
  mark_output(g, *fc.outputs[0]);
  return m;
}

inline std::vector<std::pair<std::string, ir::Tensor>> weight_only_inputs(uint32_t seed) {
  return {{"x", random_tensor({1, 32, 16}, seed, -1.f, 1.f)}, {"z", random_tensor({4, 16}, seed + 500, -1.f, 1.f)}};
}

/// `n` samples of weight_only_inputs (seeds seed, seed + 1, ...) as NumPy sample folders.
inline void write_weight_only_samples(const std::filesystem::path& dir, int n, uint32_t seed) {
  for (int i = 0; i < n; ++i) {
    const std::filesystem::path s = dir / ("s" + std::to_string(100 + i));
    std::filesystem::create_directories(s);
    for (auto& [name, t] : weight_only_inputs(seed + static_cast<uint32_t>(i))) ir::save_npy(t, (s / (name + ".npy")).string());
  }
}

}  // namespace mcc::test
