// A small transformer-shaped block for the fp16 tests (tests/transforms/fp16/embedding_mask_test.cpp,
// tests/cli/fp16_transformer_test.cpp), opset 17:
//
//   tok = Gather(E[kVocab, kHidden], ids[1, kSeq])          embedding table (float32 initializer)
//   emb = Add(tok, P[kSeq, kHidden])                         plus position embeddings (as in BERT)
//   h   = LayerNormalization(MatMul(emb, Wq), gamma, beta)
//   s   = MatMul(h, Wk[kHidden, kSeq])                        attention scores [1, kSeq, kSeq]
//   Y1  = Softmax(Add(s, M_big))    M_big: initializer [1, kSeq, kSeq], the last kMaskedKeys keys
//                                   of every row are `fill` (-3.4e38 by default), the rest 0
//   Y2  = Softmax(Add(s, M_small))  M_small: Constant node [kSeq], last kMaskedKeys keys -10000
//
// Node names: embed, add_pos, proj, ln, scores, mask_big, softmax_big, mask_small_const, mask_small,
// softmax_small.
#pragma once
#include <vector>

#include "support/graph_builder.h"

namespace mcc::test {

constexpr int64_t kVocab = 40, kHidden = 16, kSeq = 8, kMaskedKeys = 3;

inline ir::Model transformer_block(float fill = -3.4e38f) {
  ir::Model m = empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& ids = add_input(g, "ids", {1, kSeq}, ir::DType::I64);
  auto& embed = add_node(g, "Gather", "embed", {&add_random_init(g, "E", {kVocab, kHidden}, 101), &ids}, {"tok"}, 17);
  auto& pos = add_node(g, "Add", "add_pos", {embed.outputs[0], &add_random_init(g, "P", {kSeq, kHidden}, 106, -0.2f, 0.2f)},
                       {"emb"}, 17);
  auto& proj = add_node(g, "MatMul", "proj", {pos.outputs[0], &add_random_init(g, "Wq", {kHidden, kHidden}, 102)},
                        {"q"}, 17);
  auto& ln = add_node(g, "LayerNormalization", "ln",
                      {proj.outputs[0], &add_random_init(g, "gamma", {kHidden}, 103, 0.5f, 1.5f),
                       &add_random_init(g, "beta", {kHidden}, 104, -0.1f, 0.1f)},
                      {"h"}, 17, {attr_i("axis", -1)});
  auto& scores = add_node(g, "MatMul", "scores", {ln.outputs[0], &add_random_init(g, "Wk", {kHidden, kSeq}, 105)},
                          {"s"}, 17);

  std::vector<float> big(static_cast<size_t>(kSeq * kSeq), 0.f);
  for (int64_t q = 0; q < kSeq; ++q)
    for (int64_t k = kSeq - kMaskedKeys; k < kSeq; ++k) big[static_cast<size_t>(q * kSeq + k)] = fill;
  ir::Value& mb = g.add_initializer("M_big", ir::Tensor::from_vector<float>({1, kSeq, kSeq}, big));
  auto& add_big = add_node(g, "Add", "mask_big", {scores.outputs[0], &mb}, {"sb"}, 17);
  auto& y1 = add_node(g, "Softmax", "softmax_big", {add_big.outputs[0]}, {"Y1"}, 17, {attr_i("axis", -1)});

  std::vector<float> small(static_cast<size_t>(kSeq), 0.f);
  for (int64_t k = kSeq - kMaskedKeys; k < kSeq; ++k) small[static_cast<size_t>(k)] = -10000.f;
  auto& c = add_node(g, "Constant", "mask_small_const", {}, {"M_small"}, 17,
                     {ir::Attribute{"value", ir::AttrKind::Tensor, ir::Tensor::from_vector<float>({kSeq}, small), "",
                                    "", ""}});
  c.outputs[0]->dtype = ir::DType::F32;
  c.outputs[0]->shape = ir::Shape::of({kSeq});
  auto& add_small = add_node(g, "Add", "mask_small", {scores.outputs[0], c.outputs[0]}, {"ss"}, 17);
  auto& y2 = add_node(g, "Softmax", "softmax_small", {add_small.outputs[0]}, {"Y2"}, 17, {attr_i("axis", -1)});
  mark_output(g, *y1.outputs[0]);
  mark_output(g, *y2.outputs[0]);
  return m;
}

/// Token ids for one sequence, every row of the table within [0, kVocab).
inline ir::Tensor transformer_block_ids() {
  return ir::Tensor::from_vector<int64_t>({1, kSeq}, std::vector<int64_t>{3, 17, 5, 39, 0, 22, 8, 11});
}

inline std::vector<std::pair<std::string, backends::RValue>> transformer_block_feeds() {
  return {{"ids", backends::RValue::of(transformer_block_ids())}};
}

}  // namespace mcc::test
