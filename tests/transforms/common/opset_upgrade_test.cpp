// Raising the ai.onnx opset (transforms/common/opset_upgrade.h): old models whose ops changed
// meaning on the way (Clip-6, Upsample, Resize-10, Pad-2, Slice-1, TopK-1, Squeeze/Unsqueeze/
// ReduceSum/Split axes, Softmax family, Dropout, Scatter, the opset-6 broadcast attributes) are
// rewritten into the new forms and compute exactly what they did on the cpu backend, and in ONNX
// Runtime (the raised file against the original); nodes whose meaning the new form cannot keep
// are refused before anything changes, with the reason.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "ir/errors.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"
#include "support/graph_builder.h"
#include "support/ort.h"
#include "transforms/common/opset_upgrade.h"

using namespace mcc;

namespace {

// Every rewritten op of opset 9 that computes on floats, in one chain.
const char* kOpset9 = R"(
    <ir_version: 4, opset_import: ["" : 9]>
    g (float[1,2,4,4] X) => (float[1,2,3] V, int64[1,2,3] I, float[1,2,4] L, float[1,2,4] H, float[1,2,4] S,
                              float[1,2,2] E, float[1,2,2] F, float[1,2,1] M)
    <float[4] scales = {1.0, 1.0, 2.0, 2.0}, int64[1,1,4] idx = {1, 0, 1, 0}, float[1,1,4] upd = {9.0, 8.0, 7.0, 6.0}>
    {
      c = Clip<min = -0.5, max = 0.5>(X)
      u = Upsample<mode = "nearest">(c, scales)
      p = Pad<pads = [0, 0, 1, 1, 0, 0, 1, 1], value = 0.25>(u)
      s = Slice<starts = [1, 1], ends = [9, 9], axes = [2, 3]>(p)
      r = ReduceSum<axes = [3], keepdims = 0>(s)
      q = Unsqueeze<axes = [3]>(r)
      sm = Softmax<axis = 2>(q)
      sq = Squeeze<axes = [3]>(sm)
      V, I = TopK<k = 3, axis = 2>(sq)
      a, b = Split<axis = 2, split = [4, 4]>(sq)
      d = Dropout<ratio = 0.3>(a)
      L = LogSoftmax<axis = -1>(d)
      H = Hardmax<axis = 2>(b)
      S = Scatter<axis = 1>(b, idx, upd)
      E, F = Split<axis = 2>(b)
      M = ReduceMean<axes = [2]>(E)
    })";

ir::Node* producer_of(const ir::Model& m, const std::string& value) {
  const ir::Value* v = m.graph->find_value(value);
  return v ? v->producer : nullptr;
}

/// Raises a copy of `text`'s model to `to` and checks the cpu backend computes the same outputs.
ir::Model raised_and_equal(const char* text, int64_t to, int64_t expect_steps = -1) {
  const ir::Model before = test::parse_onnx_text(text);
  ir::Model after = test::parse_onnx_text(text);
  const int64_t steps = transforms::upgrade_opset(after, before.opset(""), to);
  if (expect_steps >= 0) CHECK(steps == expect_steps);
  CHECK(after.opset("") == to);
  CHECK_NOTHROW(ir::verify(after));
  const auto feeds = test::random_feeds(before, 7);
  CHECK(test::max_abs_diff(test::run_cpu(before, feeds), test::run_cpu(after, feeds)) == 0.0);
  return after;
}

/// ONNX Runtime's outputs of the original and of the raised file on the same seeded inputs agree
/// (both files load; opsets >= 7, which ONNX Runtime runs).
void same_in_onnxruntime(const char* text, const ir::Model& raised) {
  REQUIRE_MESSAGE(test::have_onnxruntime(), test::kOrtMissing);
  test::TempDir tmp("mcc-opset-ort");
  const ir::Model original = test::parse_onnx_text(text);
  const auto feeds = test::random_feeds(original, 7);
  for (const char* which : {"original", "raised"}) {
    const std::filesystem::path sample = tmp.path / which / "s0";
    std::filesystem::create_directories(sample);
    for (const auto& [name, v] : feeds) ir::save_npy(v.tensor, (sample / (name + ".npy")).string());
    const std::string file = (tmp.path / (std::string(which) + ".onnx")).string();
    ir::save_model(std::string(which) == "raised" ? raised : original, file);
    REQUIRE(test::write_ort_outputs(file, (tmp.path / which).string()));
  }
  for (size_t k = 0; k < original.graph->outputs.size(); ++k) {
    const std::string out = "s0/output_" + std::to_string(k) + ".npy";
    const ir::Tensor a = ir::load_npy((tmp.path / "original" / out).string());
    const ir::Tensor b = ir::load_npy((tmp.path / "raised" / out).string());
    INFO("output " << k);
    CHECK(test::max_abs_diff({a}, {b}) <= 1e-6);
  }
}

std::string refusal_of(const char* text, int64_t to) {
  const ir::Model m = test::parse_onnx_text(text);
  return transforms::raise_refusal(m, m.opset(""), to);
}

}  // namespace

TEST_CASE("opset raise 9 -> 13: attributes become inputs, Upsample becomes Resize, outputs unchanged") {
  const ir::Model m = raised_and_equal(kOpset9, 13);
  const ir::Node* clip = producer_of(m, "c");
  CHECK_FALSE(clip->has_attr("min"));
  REQUIRE(clip->inputs.size() == 3);
  CHECK(clip->inputs[1]->initializer->data<float>()[0] == -0.5f);
  CHECK(clip->inputs[2]->name == "c_max");
  const ir::Node* resize = producer_of(m, "u");
  CHECK(resize->op_type == "Resize");
  CHECK(resize->attr_string("coordinate_transformation_mode", "") == "asymmetric");
  CHECK(resize->attr_string("nearest_mode", "") == "floor");
  CHECK(resize->input(1) == nullptr);  // roi is optional from 13
  CHECK(resize->input(2)->name == "scales");
  const ir::Node* pad = producer_of(m, "p");
  CHECK(pad->inputs.size() == 3);
  CHECK(pad->inputs[2]->initializer->data<float>()[0] == 0.25f);
  CHECK(producer_of(m, "s")->inputs.size() == 4);
  CHECK(producer_of(m, "r")->inputs.size() == 2);
  CHECK(producer_of(m, "q")->inputs[1]->initializer->data<int64_t>()[0] == 3);
  CHECK(producer_of(m, "sm")->attr_int("axis", -1) == 2);
  CHECK(producer_of(m, "V")->inputs[1]->initializer->data<int64_t>()[0] == 3);
  CHECK(producer_of(m, "a")->inputs.size() == 2);
  CHECK(producer_of(m, "d")->inputs[1]->initializer->data<float>()[0] == doctest::Approx(0.3));
  CHECK(producer_of(m, "S")->op_type == "ScatterElements");
  CHECK(producer_of(m, "M")->has_attr("axes"));  // the Reduce ops other than ReduceSum change at 18
  CHECK_FALSE(producer_of(m, "E")->has_attr("num_outputs"));
  same_in_onnxruntime(kOpset9, m);
}

TEST_CASE("opset raise 9 -> 21: the changes at 18 are written too (Reduce axes input, Split num_outputs)") {
  const ir::Model m = raised_and_equal(kOpset9, 21);
  CHECK_FALSE(producer_of(m, "M")->has_attr("axes"));
  CHECK(producer_of(m, "M")->inputs.size() == 2);
  CHECK(producer_of(m, "E")->attr_int("num_outputs", 0) == 2);
  CHECK_FALSE(producer_of(m, "a")->has_attr("num_outputs"));  // its sizes are an input
  same_in_onnxruntime(kOpset9, m);
  // A raise that crosses nothing changes nothing but the numbers.
  ir::Model same = test::parse_onnx_text(kOpset9);
  CHECK(transforms::upgrade_opset(same, 9, 9) == 0);
  CHECK(same.opset("") == 9);
}

TEST_CASE("opset raise: Resize-10 and Upsample-7 keep their coordinates and nearest rounding") {
  const char* resize10 = R"(
    <ir_version: 5, opset_import: ["" : 10]>
    g (float[1,1,4,4] X) => (float[1,1,8,12] N, float[1,1,2,2] D, float[1,1,8,8] B)
    <float[4] up = {1.0, 1.0, 2.0, 3.0}, float[4] down = {1.0, 1.0, 0.5, 0.5}, float[4] two = {1.0, 1.0, 2.0, 2.0}>
    {
      N = Resize<mode = "nearest">(X, up)
      D = Resize<mode = "nearest">(X, down)
      B = Resize<mode = "linear">(X, two)
    })";
  for (int64_t to : {11, 13, 19}) {
    const ir::Model m = raised_and_equal(resize10, to, 3);
    CHECK(producer_of(m, "N")->attr_string("nearest_mode", "") == "floor");
    CHECK(producer_of(m, "D")->attr_string("nearest_mode", "") == "ceil");
    CHECK_FALSE(producer_of(m, "B")->has_attr("nearest_mode"));
    CHECK((producer_of(m, "B")->input(1) != nullptr) == (to < 13));  // roi required at 11 and 12
    same_in_onnxruntime(resize10, m);
  }
  const char* upsample7 = R"(
    <ir_version: 4, opset_import: ["" : 7]>
    g (float[1,2,3,3] X) => (float[1,2,6,6] Y)
    { Y = Upsample<mode = "linear", scales = [1.0, 1.0, 2.0, 2.0]>(X) })";
  const ir::Model u = raised_and_equal(upsample7, 13, 3);  // 7 -> 9 (scales input) -> Resize-10 -> 11
  CHECK(producer_of(u, "Y")->op_type == "Resize");
  CHECK(producer_of(u, "Y")->attr_string("mode", "") == "linear");
  same_in_onnxruntime(upsample7, u);
}

TEST_CASE("opset raise 6 -> 13: the legacy broadcast attributes, is_test and Clip bounds") {
  const char* opset6 = R"(
    <ir_version: 4, opset_import: ["" : 6]>
    g (float[2,3] X) => (float[2,4] Y)
    <float[3] b = {0.5, -0.5, 0.25}, float[3,4] w = {1.0, 0.0, 0.5, 0.0, 0.0, 1.0, 0.0, 0.5, 0.5, 0.0, 1.0, 0.0},
     float[4] c = {0.1, 0.2, 0.3, 0.4}, float[3] s = {1.0, 2.0, 0.5}, float[3] bb = {0.0, 0.1, 0.2},
     float[3] mu = {0.1, 0.0, -0.1}, float[3] var = {1.0, 0.5, 2.0}>
    {
      a = Add<broadcast = 1>(X, b)
      n = BatchNormalization<is_test = 1, epsilon = 0.001>(a, s, bb, mu, var)
      d = Dropout<is_test = 1, ratio = 0.2>(n)
      k = Clip<max = 0.75>(d)
      Y = Gemm<broadcast = 1>(k, w, c)
    })";
  const ir::Model m = raised_and_equal(opset6, 13);
  CHECK_FALSE(producer_of(m, "a")->has_attr("broadcast"));
  CHECK_FALSE(producer_of(m, "n")->has_attr("is_test"));
  CHECK_FALSE(producer_of(m, "Y")->has_attr("broadcast"));
  const ir::Node* clip = producer_of(m, "k");
  REQUIRE(clip->inputs.size() == 3);
  CHECK(clip->inputs[1] == nullptr);  // no lower bound
  CHECK(clip->inputs[2]->initializer->data<float>()[0] == 0.75f);
}

TEST_CASE("opset raise: nodes whose meaning the new form cannot keep are refused, naming them") {
  // Softmax-11 over axes 1..3 of a [1, 2, 3, 4] input: one normalization over 24 values.
  const char* softmax = R"(
    <ir_version: 6, opset_import: ["" : 11]>
    g (float[1,2,3,4] X) => (float[1,2,3,4] Y) { Y = Softmax(X) })";
  const std::string why = refusal_of(softmax, 13);
  CHECK(why.find("node '") == 0);
  CHECK(why.find("Softmax-11 changed meaning by Softmax-13") != std::string::npos);
  CHECK(why.find("axes 1..3 together") != std::string::npos);
  ir::Model m = test::parse_onnx_text(softmax);
  CHECK_THROWS_AS(transforms::upgrade_opset(m, 11, 13), UnsupportedError);
  CHECK(m.opset("") == 11);  // unchanged
  CHECK(refusal_of(softmax, 12).empty());  // no change of meaning below 13

  const char* dropout_mask = R"(
    <ir_version: 4, opset_import: ["" : 9]>
    g (float[2,3] X) => (float[2,3] Y, float[2,3] K) { Y, K = Dropout(X) })";
  CHECK(refusal_of(dropout_mask, 13).find("mask output is read") != std::string::npos);

  const char* scales_computed = R"(
    <ir_version: 5, opset_import: ["" : 10]>
    g (float[1,1,4,4] X, float[4] s) => (float[1,1,8,8] Y) { Y = Resize<mode = "nearest">(X, s) })";
  CHECK(refusal_of(scales_computed, 13).find("scales are not constant") != std::string::npos);

  const char* legacy_axis = R"(
    <ir_version: 4, opset_import: ["" : 6]>
    g (float[2,3,4] X, float[3] B) => (float[2,3,4] Y) { Y = Add<broadcast = 1, axis = 1>(X, B) })";
  CHECK(refusal_of(legacy_axis, 13).find("legacy broadcast aligns B at axis 1") != std::string::npos);

  const char* batch_norm_training = R"(
    <ir_version: 4, opset_import: ["" : 6]>
    g (float[2,3] X, float[3] s) => (float[2,3] Y) { Y = BatchNormalization(X, s, s, s, s) })";
  CHECK(refusal_of(batch_norm_training, 13).find("training mode") != std::string::npos);
}
