// quantize on an old opset whose ops changed meaning (common/opset_upgrade.h): a MobileNet-style
// opset-9 block with Clip-6 (ReLU6 as min/max attributes) quantizes per channel at opset 13, the
// raised float model computes exactly what the original does on the cpu backend, ONNX Runtime
// loads and runs the quantized file, and replay rebuilds it byte for byte. A Softmax whose 2-D
// coercion spans several axes still blocks the raise, naming the node and the reason.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"
#include "support/ort.h"
#include "transforms/common/opset_upgrade.h"
#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;
using test::add_node;
using test::add_random_init;
using test::attr_f;
using test::attr_i;
using test::attr_ints;

namespace {

const std::vector<int64_t> kInput = {1, 3, 8, 8};

// X -> Conv -> Clip-6 [0, 6] -> depthwise Conv -> Clip-6 -> GlobalAveragePool -> Flatten -> Gemm -> Y
ir::Model relu6_block() {
  ir::Model m = test::empty_model(9, 4);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "X", kInput);
  auto& c1 = add_node(g, "Conv", "conv1", {&x, &add_random_init(g, "W1", {8, 3, 3, 3}, 11), &add_random_init(g, "B1", {8}, 12)},
                      {"c1"}, 9, {attr_ints("pads", {1, 1, 1, 1})});
  auto& r1 = add_node(g, "Clip", "relu6_1", {c1.outputs[0]}, {"r1"}, 9, {attr_f("min", 0.f), attr_f("max", 6.f)});
  auto& c2 = add_node(g, "Conv", "dw", {r1.outputs[0], &add_random_init(g, "W2", {8, 1, 3, 3}, 13), &add_random_init(g, "B2", {8}, 14)},
                      {"c2"}, 9, {attr_ints("pads", {1, 1, 1, 1}), attr_i("group", 8)});
  auto& r2 = add_node(g, "Clip", "relu6_2", {c2.outputs[0]}, {"r2"}, 9, {attr_f("min", 0.f), attr_f("max", 6.f)});
  auto& gap = add_node(g, "GlobalAveragePool", "gap", {r2.outputs[0]}, {"gap_out"}, 9);
  auto& fl = add_node(g, "Flatten", "flat", {gap.outputs[0]}, {"flat_out"}, 9);
  auto& gm = add_node(g, "Gemm", "fc", {fl.outputs[0], &add_random_init(g, "Wf", {4, 8}, 15), &add_random_init(g, "Bf", {4}, 16)},
                      {"Y"}, 9, {attr_i("transB", 1)});
  test::mark_output(g, *gm.outputs[0]);
  return m;
}

}  // namespace

TEST_CASE("quantize: an opset-9 model with Clip-6 is raised to 13 and quantized per channel") {
  test::CalibDir calib(kInput, 8, 4100);
  // The raise alone: the bounds become inputs and the float model computes the same.
  const ir::Model original = relu6_block();
  ir::Model raised = relu6_block();
  CHECK(transforms::upgrade_opset(raised, 9, 13) == 2);
  const ir::Node* clip = raised.graph->find_value("r1")->producer;
  CHECK_FALSE(clip->has_attr("max"));
  REQUIRE(clip->inputs.size() == 3);
  CHECK(clip->inputs[2]->initializer->data<float>()[0] == 6.f);
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto feeds = test::random_feeds(original, seed);
    CHECK(test::max_abs_diff(test::run_cpu(original, feeds), test::run_cpu(raised, feeds)) == 0.0);
  }

  // quantize: per-channel weights need opset 13, which the raise now reaches.
  ir::Model q = relu6_block();
  const auto res = test::run_quantize(q, {{"calib", calib.path()}});
  CHECK(res.record["opset"]["from"] == 9);
  CHECK(res.record["opset"]["to"] == 13);
  CHECK(q.opset("") == 13);
  CHECK(q.ir_version >= 7);
  CHECK_NOTHROW(ir::verify(q));
  const ir::Node* w1 = q.graph->find_value("W1")->producer;
  REQUIRE(w1 != nullptr);
  CHECK(w1->op_type == "DequantizeLinear");
  CHECK(w1->attr_int("axis", -1) == 0);  // per channel
  CHECK(test::count_ops(q, "Clip") == 2);

  // Replay from the record rebuilds the same bytes without data.
  ir::Model again = relu6_block();
  const auto parsed = nlohmann::ordered_json::parse(res.record.dump());
  test::run_quantize(again, {{"calib", "/nonexistent"}}, &parsed);
  CHECK(ir::serialize_model(again) == ir::serialize_model(q));

  // ONNX Runtime loads and runs the quantized opset-13 file.
  REQUIRE_MESSAGE(test::have_onnxruntime(), test::kOrtMissing);
  test::TempDir tmp("mcc-opset-raise");
  const std::string file = (tmp.path / "q.onnx").string();
  ir::save_model(q, file);
  const std::filesystem::path sample = tmp.path / "data" / "s0";
  std::filesystem::create_directories(sample);
  const auto feeds = test::random_feeds(original, 5);
  ir::save_npy(feeds[0].second.tensor, (sample / "X.npy").string());
  REQUIRE(test::write_ort_outputs(file, (tmp.path / "data").string()));
  const ir::Tensor ort = ir::load_npy((sample / "output_0.npy").string());
  const ir::Tensor mine = test::run_cpu(q, feeds)[0];
  CHECK(test::max_abs_diff({ort}, {mine}) < 1e-4);
}

TEST_CASE("quantize: a Softmax whose 2-D coercion spans several axes still blocks the raise, naming it") {
  test::CalibDir calib(kInput, 2, 4200);
  ir::Model m = relu6_block();
  auto& sm = add_node(*m.graph, "Softmax", "attention_like", {m.graph->find_value("r2")}, {"P"}, 9);  // axis 1 of [1, 8, 8, 8]
  test::mark_output(*m.graph, *sm.outputs[0]);
  std::string what;
  try {
    test::run_quantize(m, {{"calib", calib.path()}});
  } catch (const UnsupportedError& e) {
    what = e.what();
  }
  CHECK(what.find("'attention_like' (Softmax-9)") != std::string::npos);
  CHECK(what.find("axes 1..3 together") != std::string::npos);
  CHECK(m.opset("") == 9);
  // Per tensor (weights and the depthwise input), opset 10 suffices and Softmax keeps its meaning
  // up to 12: no raise past it.
  ir::Model t = relu6_block();
  auto& sm2 = add_node(*t.graph, "Softmax", "attention_like", {t.graph->find_value("r2")}, {"P"}, 9);
  test::mark_output(*t.graph, *sm2.outputs[0]);
  CHECK(test::run_quantize(t, {{"calib", calib.path()}, {"per_channel", "false"}, {"depthwise_per_channel", "false"}})
            .record["opset"]["to"] == 10);
}
