// The cuda backend's data-movement ops against the cpu: views (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity), Shape/Size, Constant/ConstantOfShape, Transpose, DepthToSpace,
// SpaceToDepth, Concat, Split, Slice, Gather, Expand, Tile and Pad over several dtypes, negative
// axes, odd and empty shapes, host inputs fed from graph inputs, and what stays on the cpu.
#include <doctest/doctest.h>

#include <limits>

#include "backends/cuda/cuda_test_util.h"
#include "support/graph_builder.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_test;

namespace {

/// 0, 1, 2, ... as a tensor of dtype dt (bool: alternating), dims `dims`.
ir::Tensor counting(ir::DType dt, std::vector<int64_t> dims) {
  const int64_t n = ir::checked_numel(dims);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = dt == ir::DType::Bool ? i % 2 : i % 97 - 13 * (i % 3);
  if (dt == ir::DType::U8) for (auto& x : v) x = std::fabs(x);
  ir::Tensor out;
  ir::dispatch<MCC_ALL_DTYPES>(dt, "counting", [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = tensor_of<T>(dims, v);
  });
  return out;
}

/// Shape arithmetic feeding host inputs of cuda nodes (Reshape shape, Slice ends, Expand shape).
const char* const kShapeChain = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[2,3,4] x) => (float[6,4] y, float[4,3,2] z, float[2,3,4] w) <int64[1] minus = {-1}, int64[1] zero = {0}> {
    s = Shape(x)
    last = Shape<start = -1>(x)
    shp = Concat<axis = 0>(minus, last)
    y = Reshape(x, shp)
    t = Transpose<perm = [2, 1, 0]>(x)
    z = Slice(t, zero, last, zero)
    x1 = Slice(x, zero, minus, zero)
    w = Expand(x1, s)
  }
)";

const ir::DType kTypes[] = {ir::DType::F32, ir::DType::F16, ir::DType::I64, ir::DType::I32,
                            ir::DType::U8,  ir::DType::I8,  ir::DType::Bool};

ir::Tensor i64s(const std::vector<int64_t>& v) { return vec<int64_t>(v); }

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda views: Reshape, Flatten, Squeeze, Unsqueeze, Identity share the input buffer") {
    for (ir::DType dt : kTypes) {
      INFO("dtype " << ir::dtype_name(dt));
      const ir::Tensor x = counting(dt, {2, 3, 5});
      check_on_cuda(OpTest("Reshape", 14).in(x).in(i64s({5, -1})), "Reshape");
      check_on_cuda(OpTest("Reshape", 5).in(x).in(i64s({0, 15})), "Reshape");
      check_on_cuda(OpTest("Flatten", 13).i("axis", -1).in(x), "Flatten");
      check_on_cuda(OpTest("Flatten", 11).i("axis", 0).in(x), "Flatten");
      check_on_cuda(OpTest("Identity", 16).in(x), "Identity");
      const ir::Tensor y = counting(dt, {1, 7, 1});
      check_on_cuda(OpTest("Squeeze", 11).is("axes", {-1}).in(y), "Squeeze");
      check_on_cuda(OpTest("Squeeze", 13).in(y).in(i64s({0, 2})), "Squeeze");
      check_on_cuda(OpTest("Squeeze", 13).in(y), "Squeeze");
      check_on_cuda(OpTest("Unsqueeze", 11).is("axes", {0, -1}).in(y), "Unsqueeze");
      check_on_cuda(OpTest("Unsqueeze", 13).in(y).in(i64s({-1, 1})), "Unsqueeze");
    }
    check_on_cuda(OpTest("Reshape", 14).i("allowzero", 1).in(counting(ir::DType::F32, {0, 3})).in(i64s({3, 0})),
                  "Reshape");
    check_on_cuda(OpTest("Reshape", 14).in(counting(ir::DType::F32, {0, 3})).in(vec<int32_t>({-1, 3})), "Reshape");
  }

  TEST_CASE("cuda data ops read shapes computed upstream through their host inputs") {
    const ir::Model m = parse_onnx_text(kShapeChain);
    backends::ExecOptions eo;
    eo.threads = 1;
    eo.backend = &cuda();
    backends::Executor on_cuda(m, eo);
    backends::Executor on_cpu(m, backends::ExecOptions{1});
    const std::vector<std::pair<std::string, RValue>> feeds{{"x", RValue::of(random_of(ir::DType::F32, {2, 3, 4}, 9))}};
    check_same_outputs(on_cpu.run(feeds), on_cuda.run(feeds), "cuda", "shape chain");
    // Shape computations read only on the host stay there (placement); the data ops run on cuda.
    for (const ir::Node* n : m.graph->nodes())
      if (!n->is("Shape") && !n->is("Concat")) {
        INFO("node " << n->op_type);
        CHECK(on_cuda.placement_of(*n)->name() == "cuda");
      }
  }

  TEST_CASE("cuda Shape and Size, start/end from opset 15") {
    for (ir::DType dt : {ir::DType::F32, ir::DType::Bool, ir::DType::I64}) {
      const ir::Tensor x = counting(dt, {2, 3, 5, 1});
      check_on_cuda(OpTest("Shape", 13).in(x), "Shape");
      check_on_cuda(OpTest("Shape", 15).i("start", -3).in(x), "Shape");
      check_on_cuda(OpTest("Shape", 15).i("start", 1).i("end", -1).in(x), "Shape");
      check_on_cuda(OpTest("Shape", 15).i("start", 3).i("end", 1).in(x), "Shape");
      check_on_cuda(OpTest("Size", 13).in(x), "Size");
    }
    check_on_cuda(OpTest("Shape", 13).in(scalar<float>(2.f)), "Shape");
    check_on_cuda(OpTest("Size", 13).in(counting(ir::DType::F16, {3, 0})), "Size");
  }

  TEST_CASE("cuda Constant and ConstantOfShape") {
    check_on_cuda(OpTest("Constant", 13).t("value", counting(ir::DType::I64, {2, 3})), "Constant");
    check_on_cuda(OpTest("Constant", 13).t("value", counting(ir::DType::F16, {5})), "Constant");
    check_on_cuda(OpTest("Constant", 13).t("value", counting(ir::DType::Bool, {})), "Constant");
    check_on_cuda(OpTest("Constant", 13).f("value_float", 2.5f), "Constant");
    check_on_cuda(OpTest("Constant", 13).fs("value_floats", {1.f, -2.f, 3.5f}), "Constant");
    check_on_cuda(OpTest("Constant", 13).i("value_int", -7), "Constant");
    check_on_cuda(OpTest("Constant", 13).is("value_ints", {4, 5, 6}), "Constant");
    check_declined(OpTest("Constant", 13).ss("value_strings", {"a", "b"}));

    check_on_cuda(OpTest("ConstantOfShape", 9).in(i64s({2, 3, 5})), "ConstantOfShape");
    check_on_cuda(OpTest("ConstantOfShape", 20).t("value", vec<int64_t>({-9})).in(i64s({3, 1})), "ConstantOfShape");
    check_on_cuda(OpTest("ConstantOfShape", 20).t("value", vec_of<f16>({1.5})).in(i64s({7})), "ConstantOfShape");
    check_on_cuda(OpTest("ConstantOfShape", 20).t("value", bools({1}, {1})).in(i64s({4, 3})), "ConstantOfShape");
    check_on_cuda(OpTest("ConstantOfShape", 20).t("value", vec<uint8_t>({200})).in(i64s({3, 0})), "ConstantOfShape");
    check_on_cuda(OpTest("ConstantOfShape", 20).t("value", vec<float>({3.f})).in(i64s({})), "ConstantOfShape");
  }

  TEST_CASE("cuda Transpose: permutations, dtypes, rank 1 and empty") {
    for (ir::DType dt : kTypes) {
      INFO("dtype " << ir::dtype_name(dt));
      const ir::Tensor x = counting(dt, {3, 5, 7, 2});
      check_on_cuda(OpTest("Transpose", 13).in(x), "Transpose");
      check_on_cuda(OpTest("Transpose", 13).is("perm", {2, 0, 3, 1}).in(x), "Transpose");
      check_on_cuda(OpTest("Transpose", 13).is("perm", {0, 1, 3, 2}).in(x), "Transpose");
    }
    check_on_cuda(OpTest("Transpose", 13).in(counting(ir::DType::F32, {9})), "Transpose");
    check_on_cuda(OpTest("Transpose", 13).is("perm", {1, 0, 2}).in(counting(ir::DType::F32, {4, 0, 3})), "Transpose");
    check_on_cuda(OpTest("Transpose", 13).is("perm", {1, 2, 0}).in(counting(ir::DType::I64, {1, 33, 1})), "Transpose");
    // Rank 9: the copy merges the dims that stay in place.
    check_on_cuda(OpTest("Transpose", 13).is("perm", {1, 0, 2, 3, 4, 5, 6, 7, 8}).in(counting(ir::DType::F32, {2, 3, 2, 1, 2, 1, 2, 1, 2})),
                  "Transpose");
    check_declined(OpTest("Transpose", 13).in(ir::Tensor::from_strings({2}, {"a", "b"})));
  }

  TEST_CASE("cuda DepthToSpace (DCR, CRD) and SpaceToDepth") {
    for (ir::DType dt : kTypes) {
      INFO("dtype " << ir::dtype_name(dt));
      const ir::Tensor x = counting(dt, {2, 12, 3, 5});
      check_on_cuda(OpTest("DepthToSpace", 13).i("blocksize", 2).in(x), "DepthToSpace");
      check_on_cuda(OpTest("DepthToSpace", 13).i("blocksize", 2).s("mode", "CRD").in(x), "DepthToSpace");
      check_on_cuda(OpTest("SpaceToDepth", 13).i("blocksize", 3).in(counting(dt, {2, 5, 6, 9})), "SpaceToDepth");
    }
    check_on_cuda(OpTest("DepthToSpace", 11).i("blocksize", 1).in(counting(ir::DType::F32, {1, 3, 2, 2})), "DepthToSpace");
    check_on_cuda(OpTest("SpaceToDepth", 1).i("blocksize", 2).in(counting(ir::DType::F32, {0, 2, 4, 4})), "SpaceToDepth");
  }

  TEST_CASE("cuda Concat: axes, many inputs, empty inputs") {
    for (ir::DType dt : kTypes) {
      INFO("dtype " << ir::dtype_name(dt));
      check_on_cuda(OpTest("Concat", 13).i("axis", -1).in(counting(dt, {2, 3, 1})).in(counting(dt, {2, 3, 4})).in(counting(dt, {2, 3, 0})).in(counting(dt, {2, 3, 3})),
                    "Concat");
      check_on_cuda(OpTest("Concat", 13).i("axis", 1).in(counting(dt, {2, 5, 3})).in(counting(dt, {2, 1, 3})), "Concat");
      check_on_cuda(OpTest("Concat", 13).i("axis", 0).in(counting(dt, {7})).in(counting(dt, {3})), "Concat");
    }
    check_on_cuda(OpTest("Concat", 1).in(counting(ir::DType::F32, {2, 2})).in(counting(ir::DType::F32, {2, 3})), "Concat");
    check_on_cuda(OpTest("Concat", 13).i("axis", 1).in(counting(ir::DType::F32, {0, 2})).in(counting(ir::DType::F32, {0, 3})),
                  "Concat");
    check_on_cuda(OpTest("Concat", 13).i("axis", 0).in(counting(ir::DType::I64, {5})), "Concat");
  }

  TEST_CASE("cuda Split: attribute, input, num_outputs, negative axis") {
    for (ir::DType dt : kTypes) {
      INFO("dtype " << ir::dtype_name(dt));
      const ir::Tensor x = counting(dt, {3, 7, 2});
      check_on_cuda(OpTest("Split", 11).i("axis", 1).is("split", {2, 0, 5}).in(x).outs(3), "Split");
      check_on_cuda(OpTest("Split", 13).i("axis", -2).in(x).in(i64s({4, 3})).outs(2), "Split");
      check_on_cuda(OpTest("Split", 18).i("axis", 1).i("num_outputs", 3).in(x).outs(3), "Split");
      check_on_cuda(OpTest("Split", 13).i("axis", 0).in(x).outs(3), "Split");
    }
    check_on_cuda(OpTest("Split", 13).i("axis", 0).in(counting(ir::DType::F32, {0, 4})).outs(2), "Split");
  }

  TEST_CASE("cuda Slice: steps, negative steps, clamping, attribute form") {
    for (ir::DType dt : kTypes) {
      INFO("dtype " << ir::dtype_name(dt));
      const ir::Tensor x = counting(dt, {5, 7, 3});
      check_on_cuda(OpTest("Slice", 13).in(x).in(i64s({1, 0})).in(i64s({4, 7})).in(i64s({0, 1})).in(i64s({2, 3})), "Slice");
      check_on_cuda(OpTest("Slice", 13).in(x).in(i64s({-1})).in(i64s({-1000})).in(i64s({1})).in(i64s({-2})), "Slice");
      check_on_cuda(OpTest("Slice", 13).in(x).in(i64s({100, -100})).in(i64s({-100, 100})).in(i64s({-1, 0})).in(i64s({-1, 1})),
                    "Slice");
    }
    const ir::Tensor x = counting(ir::DType::F32, {5, 7, 3});
    check_on_cuda(OpTest("Slice", 13).in(x).in(i64s({-100})).in(i64s({1000})), "Slice");
    check_on_cuda(OpTest("Slice", 13).in(x).in(i64s({4})).in(i64s({2})).none().none(), "Slice");  // empty
    check_on_cuda(OpTest("Slice", 13).in(x).in(vec<int32_t>({6, 2})).in(vec<int32_t>({0, -4})).in(vec<int32_t>({1, 2})).in(vec<int32_t>({-3, -1})),
                  "Slice");
    check_on_cuda(OpTest("Slice", 13).in(x).in(i64s({2})).in(i64s({3})).in(i64s({1})).in(i64s({std::numeric_limits<int64_t>::max()})),
                  "Slice");
    check_on_cuda(OpTest("Slice", 13).in(x).in(i64s({6})).in(i64s({0})).in(i64s({1})).in(i64s({std::numeric_limits<int64_t>::min()})),
                  "Slice");
    check_on_cuda(OpTest("Slice", 9).is("starts", {1, -2}).is("ends", {1000, -1}).is("axes", {0, -1}).in(x), "Slice");
    check_on_cuda(OpTest("Slice", 1).is("starts", {0}).is("ends", {2}).in(x), "Slice");
  }

  TEST_CASE("cuda Gather: axes, negative and scalar indices, int32/int64 indices") {
    for (ir::DType dt : kTypes) {
      INFO("dtype " << ir::dtype_name(dt));
      const ir::Tensor x = counting(dt, {5, 4, 3});
      check_on_cuda(OpTest("Gather", 13).in(x).in(i64s({4, -1, 0, -5, 2})), "Gather");
      check_on_cuda(OpTest("Gather", 13).i("axis", 1).in(x).in(tensor<int32_t>({2, 2}, {3, -4, 1, 1})), "Gather");
      check_on_cuda(OpTest("Gather", 13).i("axis", -1).in(x).in(scalar<int64_t>(-1)), "Gather");
    }
    check_on_cuda(OpTest("Gather", 13).in(counting(ir::DType::F32, {5, 2})).in(tensor<int64_t>({0}, {})), "Gather");
    check_on_cuda(OpTest("Gather", 11).i("axis", 1).in(counting(ir::DType::I64, {3, 0})).in(i64s({})), "Gather");
    check_on_cuda(OpTest("Gather", 1).in(counting(ir::DType::F32, {7})).in(vec<int32_t>({6, 0, 6})), "Gather");
    check_declined(OpTest("Gather", 13).in(ir::Tensor::from_strings({2}, {"a", "b"})).in(i64s({1})));
  }

  TEST_CASE("cuda Expand and Tile") {
    for (ir::DType dt : kTypes) {
      INFO("dtype " << ir::dtype_name(dt));
      check_on_cuda(OpTest("Expand", 13).in(counting(dt, {3, 1})).in(i64s({2, 3, 5})), "Expand");
      check_on_cuda(OpTest("Expand", 13).in(counting(dt, {2, 1, 4})).in(i64s({1, 3, 1})), "Expand");
      check_on_cuda(OpTest("Expand", 13).in(counting(dt, {2, 3})).in(i64s({2, 3})), "Expand");
      check_on_cuda(OpTest("Tile", 13).in(counting(dt, {2, 3})).in(i64s({2, 3})), "Tile");
      check_on_cuda(OpTest("Tile", 13).in(counting(dt, {3, 1, 2})).in(i64s({1, 5, 0})), "Tile");
    }
    check_on_cuda(OpTest("Expand", 8).in(counting(ir::DType::F32, {1})).in(i64s({0, 4})), "Expand");
    check_on_cuda(OpTest("Tile", 6).in(counting(ir::DType::F32, {7})).in(i64s({3})), "Tile");
    check_on_cuda(OpTest("Tile", 13).in(counting(ir::DType::F32, {0, 2})).in(i64s({3, 2})), "Tile");
  }

  TEST_CASE("cuda Pad: constant, reflect, edge, wrap, negative pads, attributes, axes") {
    for (ir::DType dt : kTypes) {
      INFO("dtype " << ir::dtype_name(dt));
      const ir::Tensor x = counting(dt, {3, 4, 5});
      for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
        INFO("mode " << mode);
        check_on_cuda(OpTest("Pad", 13).s("mode", mode).in(x).in(i64s({1, 0, 2, 0, 3, 1})), "Pad");
        check_on_cuda(OpTest("Pad", 13).s("mode", mode).in(x).in(i64s({0, -1, 1, 2, 0, -2})), "Pad");
      }
      check_on_cuda(OpTest("Pad", 13).in(x).in(i64s({1, 1, 1, 1, 1, 1})).in(counting(dt, {})), "Pad");
      check_on_cuda(OpTest("Pad", 18).in(x).in(i64s({2, 3})).none().in(i64s({-1})), "Pad");
    }
    const ir::Tensor x = counting(ir::DType::F32, {3, 4});
    check_on_cuda(OpTest("Pad", 2).is("pads", {1, 2, 0, 1}).f("value", 1.5f).in(x), "Pad");
    check_on_cuda(OpTest("Pad", 2).s("mode", "reflect").is("pads", {2, 3, 2, 3}).in(x), "Pad");
    check_on_cuda(OpTest("Pad", 2).is("pads", {1, 0, 1, 0}).f("value", -3.f).in(counting(ir::DType::I32, {2, 2})), "Pad");
    check_on_cuda(OpTest("Pad", 13).in(x).in(i64s({0, 5, 0, 6})).in(scalar<float>(-2.f)), "Pad");
    check_on_cuda(OpTest("Pad", 13).in(counting(ir::DType::F32, {0, 3})).in(i64s({1, 0, 1, 0})), "Pad");
    check_on_cuda(OpTest("Pad", 13).s("mode", "edge").in(counting(ir::DType::F16, {1, 1})).in(i64s({2, 2, 2, 2})), "Pad");
    check_declined(OpTest("Pad", 13).in(ir::Tensor::from_strings({2}, {"a", "b"})).in(i64s({1, 1})));
  }

  TEST_CASE("cuda Gather with an index out of range fails the run naming the node, as the cpu does") {
    const ir::Tensor x = counting(ir::DType::F32, {3, 4});
    const OpTest bad = OpTest("Gather", 13).in(x).in(i64s({0, 3, 7}));
    CHECK_THROWS_AS(bad.run_on(backends::cpu_backend()), ModelError);
    std::string message;
    try {
      bad.run_on(cuda());
    } catch (const ModelError& e) {
      message = e.what();
    }
    CHECK(message.find("node 'node' (Gather-13)") != std::string::npos);
    CHECK(message.find("out of range") != std::string::npos);
    CHECK_THROWS_AS(OpTest("Gather", 13).in(x).in(i64s({-4})).run_on(cuda()), ModelError);
    // The error is cleared: the next run with good indices succeeds and matches the cpu.
    check_on_cuda(OpTest("Gather", 13).in(x).in(i64s({2, -3})), "Gather");
  }
}
