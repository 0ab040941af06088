// Small transformer-shaped blocks for the dynamic quantization tests
// (tests/transforms/quantize/dynamic_test.cpp, dynamic_per_token_test.cpp,
// tests/cli/quantize_dynamic_test.cpp), opset 17:
//
//   q   = MatMul(x[2, 8, 16], Wq[16, 16]);  qb = Add(q, bq)      projection with a bias Add
//   k   = MatMul(x, Wk[16, 16])                                  x read by two MatMuls
//   h   = LayerNormalization(qb, gamma, beta)
//   s   = MatMul(h, Wo[16, 8])                                   [2, 8, 8]
//   att = MatMul(h, Transpose(k)[2, 16, 8])                      two activations: stays float
//   Y1  = Softmax(Add(att, s))
//   Y2  = Gemm(z[4, 16], Wg[8, 16], C[8], transB=1)              a Gemm whose output is a graph output
//
// Node names: proj_q, bias_q, proj_k, ln, proj_o, kt, att, mix, softmax, fc.
#pragma once
#include <utility>
#include <vector>

#include "support/graph_builder.h"

namespace mcc::test {

inline ir::Model dynamic_block() {
  ir::Model m = empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "x", {2, 8, 16});
  ir::Value& z = add_input(g, "z", {4, 16});
  auto& q = add_node(g, "MatMul", "proj_q", {&x, &add_random_init(g, "Wq", {16, 16}, 201)}, {"q"}, 17);
  auto& qb = add_node(g, "Add", "bias_q", {q.outputs[0], &add_random_init(g, "bq", {16}, 202, -0.1f, 0.1f)}, {"qb"}, 17);
  auto& k = add_node(g, "MatMul", "proj_k", {&x, &add_random_init(g, "Wk", {16, 16}, 203)}, {"k"}, 17);
  auto& ln = add_node(g, "LayerNormalization", "ln",
                      {qb.outputs[0], &add_random_init(g, "gamma", {16}, 204, 0.5f, 1.5f),
                       &add_random_init(g, "beta", {16}, 205, -0.1f, 0.1f)},
                      {"h"}, 17, {attr_i("axis", -1)});
  auto& s = add_node(g, "MatMul", "proj_o", {ln.outputs[0], &add_random_init(g, "Wo", {16, 8}, 206)}, {"s"}, 17);
  auto& kt = add_node(g, "Transpose", "kt", {k.outputs[0]}, {"k_t"}, 17, {attr_ints("perm", {0, 2, 1})});
  auto& att = add_node(g, "MatMul", "att", {ln.outputs[0], kt.outputs[0]}, {"a"}, 17);
  auto& mix = add_node(g, "Add", "mix", {att.outputs[0], s.outputs[0]}, {"as"}, 17);
  auto& y1 = add_node(g, "Softmax", "softmax", {mix.outputs[0]}, {"Y1"}, 17, {attr_i("axis", -1)});
  auto& fc = add_node(g, "Gemm", "fc",
                      {&z, &add_random_init(g, "Wg", {8, 16}, 207), &add_random_init(g, "C", {8}, 208, -0.5f, 0.5f)},
                      {"Y2"}, 17, {attr_i("transB", 1)});
  mark_output(g, *y1.outputs[0]);
  mark_output(g, *fc.outputs[0]);
  return m;
}

/// A feed-forward block beside an ordinary projection, opset 17:
///   p = MatMul(z[2, 8, 16], Wp[16, 16])                            node proj
///   h = MatMul(x[2, 8, 16], W1[16, 32]); hb = Add(h, b1)           nodes up, up_bias
///   gl = hb * (1 + erf(hb / sqrt 2)) * 0.5                         the exported GELU (node gelu)
///   y = MatMul(gl, W2[32, 16])                                     node down
inline ir::Model feed_forward_block() {
  ir::Model m = empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = add_input(g, "x", {2, 8, 16});
  ir::Value& z = add_input(g, "z", {2, 8, 16});
  auto& proj = add_node(g, "MatMul", "proj", {&z, &add_random_init(g, "Wp", {16, 16}, 41)}, {"p"}, 17);
  auto& up = add_node(g, "MatMul", "up", {&x, &add_random_init(g, "W1", {16, 32}, 42)}, {"h"}, 17);
  auto& bias = add_node(g, "Add", "up_bias", {up.outputs[0], &add_random_init(g, "b1", {32}, 43)}, {"hb"}, 17);
  ir::Value& rt2 = g.add_initializer("sqrt2", ir::Tensor::scalar<float>(1.4142135f));
  ir::Value& one = g.add_initializer("one", ir::Tensor::scalar<float>(1.f));
  ir::Value& half = g.add_initializer("half", ir::Tensor::scalar<float>(0.5f));
  auto& div = add_node(g, "Div", "div", {bias.outputs[0], &rt2}, {"hd"}, 17);
  auto& erf = add_node(g, "Erf", "erf", {div.outputs[0]}, {"he"}, 17);
  auto& add = add_node(g, "Add", "add", {erf.outputs[0], &one}, {"ha"}, 17);
  auto& mul = add_node(g, "Mul", "mul", {bias.outputs[0], add.outputs[0]}, {"hm"}, 17);
  auto& gelu = add_node(g, "Mul", "gelu", {mul.outputs[0], &half}, {"gl"}, 17);
  auto& down = add_node(g, "MatMul", "down", {gelu.outputs[0], &add_random_init(g, "W2", {32, 16}, 44)}, {"y"}, 17);
  mark_output(g, *proj.outputs[0]);
  mark_output(g, *down.outputs[0]);
  return m;
}

/// Inputs of one sample: x and z uniform in [-2, 2].
inline std::vector<std::pair<std::string, ir::Tensor>> dynamic_block_inputs(uint32_t seed) {
  return {{"x", random_tensor({2, 8, 16}, seed, -2.f, 2.f)}, {"z", random_tensor({4, 16}, seed + 1000, -2.f, 2.f)}};
}

/// The same sample as executor feeds (run_cpu).
inline std::vector<std::pair<std::string, backends::RValue>> dynamic_block_feeds(uint32_t seed) {
  std::vector<std::pair<std::string, backends::RValue>> f;
  for (auto& [n, t] : dynamic_block_inputs(seed)) f.emplace_back(n, backends::RValue::of(t));
  return f;
}

}  // namespace mcc::test
