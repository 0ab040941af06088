// Kernel tests for the tensor-op family (shape/constant ops, transpose/concat/split, slice/pad,
// gather/scatter). Expected values come from the ONNX operator spec examples or are worked out by
// hand in the test.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::DType;
using ir::Tensor;

namespace {

template <class T>
std::vector<T> vals(const Tensor& t) {
  auto d = t.data<T>();
  return {d.begin(), d.end()};
}
std::vector<float> halfs(const Tensor& t) {
  std::vector<float> out;
  for (f16 h : t.data<f16>()) out.push_back(static_cast<float>(h));
  return out;
}
using V64 = std::vector<int64_t>;
using VF = std::vector<float>;

}  // namespace

// ---------------------------------------------------------------- shape ops

TEST_CASE("tensor_ops: Reshape copies 0 dims, infers -1, returns a view and honours allowzero") {
  Tensor x = tensor<float>({2, 3, 4}, VF(24, 1.f));
  Tensor y = OpTest("Reshape", 14).in(x).in(vec<int64_t>({4, 0, -1})).run1();
  CHECK(y.dims() == V64{4, 3, 2});
  CHECK(y.buffer() == x.buffer());  // zero-copy
  Tensor e = OpTest("Reshape", 14).i("allowzero", 1).in(tensor<float>({0, 3}, {})).in(vec<int64_t>({3, 0})).run1();
  CHECK(e.dims() == V64{3, 0});
  Tensor old = OpTest("Reshape", 1).is("shape", {6, 4}).in(x).run1();
  CHECK(old.dims() == V64{6, 4});
  CHECK_THROWS_AS(OpTest("Reshape", 14).in(x).in(vec<int64_t>({5, -1})).run(), ModelError);
  CHECK_THROWS_AS(OpTest("Reshape", 14).in(x).in(vec<int64_t>({-1, -1})).run(), ModelError);
}

TEST_CASE("tensor_ops: Flatten, Squeeze (attribute and input forms) and Unsqueeze reshape views") {
  Tensor x = tensor<int32_t>({2, 3, 4, 5}, std::vector<int32_t>(120, 7));
  CHECK(OpTest("Flatten", 13).i("axis", 2).in(x).run1().dims() == V64{6, 20});
  CHECK(OpTest("Flatten", 13).i("axis", -1).in(x).run1().dims() == V64{24, 5});
  CHECK(OpTest("Flatten", 13).i("axis", 0).in(x).run1().dims() == V64{1, 120});
  Tensor s = tensor<float>({1, 3, 1, 2}, VF(6, 0.f));
  CHECK(OpTest("Squeeze", 11).is("axes", {0}).in(s).run1().dims() == V64{3, 1, 2});
  CHECK(OpTest("Squeeze", 13).in(s).in(vec<int64_t>({-2})).run1().dims() == V64{1, 3, 2});
  CHECK(OpTest("Squeeze", 13).in(s).run1().dims() == V64{3, 2});
  CHECK_THROWS_AS(OpTest("Squeeze", 13).in(s).in(vec<int64_t>({1})).run(), ModelError);
  Tensor u = tensor<float>({3, 4}, VF(12, 0.f));
  CHECK(OpTest("Unsqueeze", 13).in(u).in(vec<int64_t>({2, 0})).run1().dims() == V64{1, 3, 1, 4});
  CHECK(OpTest("Unsqueeze", 11).is("axes", {-1}).in(u).run1().dims() == V64{3, 4, 1});
  CHECK_THROWS_AS(OpTest("Unsqueeze", 13).in(u).in(vec<int64_t>({0, 0})).run(), ModelError);
}

TEST_CASE("tensor_ops: Shape with start/end clamping and Size") {
  Tensor x = tensor<float>({2, 3, 4}, VF(24, 0.f));
  CHECK(vals<int64_t>(OpTest("Shape", 15).in(x).run1()) == V64{2, 3, 4});
  CHECK(vals<int64_t>(OpTest("Shape", 15).i("start", -1).in(x).run1()) == V64{4});
  CHECK(vals<int64_t>(OpTest("Shape", 15).i("start", -10).i("end", 10).in(x).run1()) == V64{2, 3, 4});
  CHECK(vals<int64_t>(OpTest("Shape", 15).i("start", 2).i("end", 1).in(x).run1()).empty());
  Tensor sz = OpTest("Size", 13).in(x).run1();
  CHECK(sz.dtype() == DType::I64);
  CHECK(sz.rank() == 0);
  CHECK(vals<int64_t>(sz) == V64{24});
}

TEST_CASE("tensor_ops: Constant attributes, ConstantOfShape, EyeLike and Identity") {
  Tensor c = OpTest("Constant", 13).is("value_ints", {1, 2, 3}).run1();
  CHECK(c.dtype() == DType::I64);
  CHECK(vals<int64_t>(c) == V64{1, 2, 3});
  CHECK(vals<float>(OpTest("Constant", 13).f("value_float", 2.5f).run1()) == VF{2.5f});
  CHECK(OpTest("Constant", 13).s("value_string", "hi").run1().strings() ==
        std::vector<std::string>{"hi"});
  CHECK_THROWS_AS(OpTest("Constant", 13).run(), ModelError);

  Tensor cs = OpTest("ConstantOfShape", 9).t("value", tensor<int32_t>({1}, {7})).in(vec<int64_t>({2, 2})).run1();
  CHECK(cs.dtype() == DType::I32);
  CHECK(vals<int32_t>(cs) == std::vector<int32_t>{7, 7, 7, 7});
  CHECK(OpTest("ConstantOfShape", 9).in(vec<int64_t>({0})).run1().numel() == 0);
  CHECK(vals<float>(OpTest("ConstantOfShape", 9).in(vec<int64_t>({2})).run1()) == VF{0.f, 0.f});

  Tensor eye = OpTest("EyeLike", 9)
                   .i("k", 1)
                   .i("dtype", static_cast<int64_t>(DType::I32))
                   .in(tensor<float>({3, 4}, VF(12, 5.f)))
                   .run1();
  CHECK(vals<int32_t>(eye) == std::vector<int32_t>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  Tensor eh = OpTest("EyeLike", 9).in(tensor<f16>({2, 2}, {3, 3, 3, 3})).run1();
  CHECK(halfs(eh) == VF{1, 0, 0, 1});
  CHECK_THROWS_AS(OpTest("EyeLike", 9).in(tensor<float>({4}, VF(4, 0.f))).run(), ModelError);

  Tensor s = Tensor::from_strings({2}, {"a", "b"});
  CHECK(OpTest("Identity", 16).in(s).run1().strings() == std::vector<std::string>{"a", "b"});
}

TEST_CASE("tensor_ops: Range on integer and float types") {
  CHECK(vals<int32_t>(OpTest("Range", 11)
                          .in(Tensor::scalar<int32_t>(10))
                          .in(Tensor::scalar<int32_t>(4))
                          .in(Tensor::scalar<int32_t>(-3))
                          .run1()) == std::vector<int32_t>{10, 7});
  CHECK(vals<float>(OpTest("Range", 11)
                        .in(Tensor::scalar<float>(3))
                        .in(Tensor::scalar<float>(9))
                        .in(Tensor::scalar<float>(3))
                        .run1()) == VF{3, 6});
  CHECK(vals<int64_t>(OpTest("Range", 11)
                          .in(Tensor::scalar<int64_t>(5))
                          .in(Tensor::scalar<int64_t>(1))
                          .in(Tensor::scalar<int64_t>(2))
                          .run1())
            .empty());
  CHECK_THROWS_AS(OpTest("Range", 11)
                      .in(Tensor::scalar<int64_t>(0))
                      .in(Tensor::scalar<int64_t>(1))
                      .in(Tensor::scalar<int64_t>(0))
                      .run(),
                  ModelError);
}

TEST_CASE(
    "tensor_ops: Dropout in inference and with training ratio 0 is the identity with a true mask") {
  Tensor x = tensor<float>({2, 2}, {1, 2, 3, 4});
  auto r = OpTest("Dropout", 13).outs(2).in(x).run();
  CHECK(vals<float>(r[0]) == VF{1, 2, 3, 4});
  CHECK(r[1].dtype() == DType::Bool);
  CHECK(vals<bool>(r[1]) == std::vector<bool>{true, true, true, true});
  auto t = OpTest("Dropout", 13).outs(2).in(x).in(Tensor::scalar<float>(0.f)).in(bools({}, {1})).run();
  CHECK(vals<float>(t[0]) == VF{1, 2, 3, 4});
  auto tr = OpTest("Dropout", 13)
                .i("seed", 3)
                .outs(2)
                .in(tensor<float>({1000}, VF(1000, 1.f)))
                .in(Tensor::scalar<float>(0.5f))
                .in(bools({}, {1}))
                .run();
  int kept = 0;
  for (float v : vals<float>(tr[0])) {
    CHECK((v == 0.f || v == 2.f));
    kept += v != 0.f;
  }
  CHECK(kept > 400);
  CHECK(kept < 600);
}

// ---------------------------------------------------------------- layout ops

TEST_CASE("tensor_ops: Transpose default and explicit perms over f32, f16 and int8") {
  CHECK(vals<float>(OpTest("Transpose", 13).in(tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})).run1()) ==
        VF{1, 4, 2, 5, 3, 6});
  Tensor h = OpTest("Transpose", 13).in(tensor<f16>({2, 3}, {1, 2, 3, 4, 5, 6})).run1();
  CHECK(h.dims() == V64{3, 2});
  CHECK(halfs(h) == VF{1, 4, 2, 5, 3, 6});
  std::vector<int8_t> v(24);
  for (int k = 0; k < 24; ++k) v[static_cast<size_t>(k)] = static_cast<int8_t>(k);
  Tensor y = OpTest("Transpose", 13).is("perm", {1, 2, 0}).in(tensor<int8_t>({2, 3, 4}, v)).run1();
  CHECK(y.dims() == V64{3, 4, 2});
  auto d = vals<int8_t>(y);
  // y[i][j][k] = x[k][i][j]
  bool ok = true;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 2; ++k)
        ok = ok && d[static_cast<size_t>((i * 4 + j) * 2 + k)] == k * 12 + i * 4 + j;
  CHECK(ok);
  CHECK_THROWS_AS(OpTest("Transpose", 13).is("perm", {0, 0}).in(tensor<float>({2, 2}, VF(4, 0.f))).run(),
                  ModelError);
}

TEST_CASE("tensor_ops: Concat on strings and int64, and Split by sizes and by num_outputs") {
  Tensor a = Tensor::from_strings({1, 2}, {"a", "b"}),
         b = Tensor::from_strings({2, 2}, {"c", "d", "e", "f"});
  Tensor s = OpTest("Concat", 13).i("axis", 0).in(a).in(b).run1();
  CHECK(s.dims() == V64{3, 2});
  CHECK(s.strings() == std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
  Tensor c = OpTest("Concat", 13)
                 .i("axis", -1)
                 .in(tensor<int64_t>({2, 1}, {1, 2}))
                 .in(tensor<int64_t>({2, 2}, {3, 4, 5, 6}))
                 .run1();
  CHECK(vals<int64_t>(c) == V64{1, 3, 4, 2, 5, 6});
  CHECK_THROWS_AS(
      OpTest("Concat", 13).i("axis", 0).in(tensor<float>({1, 2}, {1, 2})).in(tensor<float>({1, 3}, {1, 2, 3})).run(),
      ModelError);

  Tensor x = tensor<float>({6}, {1, 2, 3, 4, 5, 6});
  auto p = OpTest("Split", 13).outs(2).in(x).in(vec<int64_t>({2, 4})).run();
  CHECK(vals<float>(p[0]) == VF{1, 2});
  CHECK(vals<float>(p[1]) == VF{3, 4, 5, 6});
  auto q = OpTest("Split", 18).i("num_outputs", 3).outs(3).in(tensor<float>({7}, {1, 2, 3, 4, 5, 6, 7})).run();
  CHECK(vals<float>(q[0]) == VF{1, 2, 3});
  CHECK(vals<float>(q[2]) == VF{7});
  auto r = OpTest("Split", 11)
               .i("axis", 1)
               .is("split", {1, 2})
               .outs(2)
               .in(tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}))
               .run();
  CHECK(vals<float>(r[1]) == VF{2, 3, 5, 6});
  CHECK_THROWS_AS(OpTest("Split", 13).outs(2).in(x).in(vec<int64_t>({2, 3})).run(), ModelError);
}

TEST_CASE("tensor_ops: DepthToSpace DCR/CRD and SpaceToDepth") {
  Tensor x = tensor<float>({1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor dcr = OpTest("DepthToSpace", 13).i("blocksize", 2).in(x).run1();
  CHECK(dcr.dims() == V64{1, 2, 2, 2});
  CHECK(vals<float>(dcr) == VF{0, 2, 4, 6, 1, 3, 5, 7});
  Tensor crd = OpTest("DepthToSpace", 13).i("blocksize", 2).s("mode", "CRD").in(x).run1();
  CHECK(vals<float>(crd) == VF{0, 1, 2, 3, 4, 5, 6, 7});
  Tensor back = OpTest("SpaceToDepth", 13).i("blocksize", 2).in(dcr).run1();
  CHECK(back.dims() == V64{1, 8, 1, 1});
  CHECK(vals<float>(back) == VF{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK_THROWS_AS(OpTest("DepthToSpace", 13).i("blocksize", 3).in(x).run(), ModelError);
}

TEST_CASE("tensor_ops: Tile and Expand") {
  Tensor x = tensor<int32_t>({2, 2}, {0, 1, 2, 3});
  CHECK(vals<int32_t>(OpTest("Tile", 13).in(x).in(vec<int64_t>({2, 1})).run1()) ==
        std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3});
  CHECK(vals<int32_t>(OpTest("Tile", 13).in(x).in(vec<int64_t>({1, 2})).run1()) ==
        std::vector<int32_t>{0, 1, 0, 1, 2, 3, 2, 3});
  CHECK_THROWS_AS(OpTest("Tile", 13).in(x).in(vec<int64_t>({2})).run(), ModelError);
  Tensor e = OpTest("Expand", 13).in(tensor<float>({3, 1}, {1, 2, 3})).in(vec<int64_t>({2, 1, 2})).run1();
  CHECK(e.dims() == V64{2, 3, 2});
  CHECK(vals<float>(e) == VF{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  CHECK_THROWS_AS(OpTest("Expand", 13).in(tensor<float>({3}, {1, 2, 3})).in(vec<int64_t>({2})).run(), ModelError);
}

// ---------------------------------------------------------------- slice / pad

TEST_CASE("tensor_ops: Slice with steps, negative steps, clamping and opset-1 attributes") {
  Tensor x = tensor<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(vals<float>(OpTest("Slice", 13)
                        .in(x)
                        .in(vec<int64_t>({1, 0}))
                        .in(vec<int64_t>({2, 3}))
                        .in(vec<int64_t>({0, 1}))
                        .in(vec<int64_t>({1, 2}))
                        .run1()) == VF{5, 7});
  CHECK(vals<float>(OpTest("Slice", 13).in(x).in(vec<int64_t>({0, 1})).in(vec<int64_t>({-1, 1000})).run1()) ==
        VF{2, 3, 4});
  CHECK(vals<float>(OpTest("Slice", 1).is("starts", {0, 1}).is("ends", {-1, 1000}).in(x).run1()) ==
        VF{2, 3, 4});
  Tensor r = tensor<float>({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  CHECK(vals<float>(
            OpTest("Slice", 13).in(r).in(vec<int64_t>({-1})).in(vec<int64_t>({kMin})).none().in(vec<int64_t>({-3})).run1()) ==
        VF{9, 6, 3, 0});
  CHECK(
      OpTest("Slice", 13).in(r).in(vec<int64_t>({20})).in(vec<int64_t>({-100})).none().in(vec<int64_t>({-1})).run1().numel() ==
      10);
  CHECK(OpTest("Slice", 13).in(r).in(vec<int64_t>({5})).in(vec<int64_t>({2})).run1().numel() == 0);
  CHECK_THROWS_AS(OpTest("Slice", 13).in(r).in(vec<int64_t>({0})).in(vec<int64_t>({2})).none().in(vec<int64_t>({0})).run(),
                  ModelError);
}

TEST_CASE("tensor_ops: step-2 Slice of the last axis (the vector path) takes every second element") {
  // Rows of 70 and 71: 16-wide blocks plus a tail; start 0 and 1; int32 shares the 4-byte path.
  for (int64_t w : {int64_t{70}, int64_t{71}, int64_t{33}})
    for (int64_t start : {int64_t{0}, int64_t{1}}) {
      CAPTURE(w);
      CAPTURE(start);
      auto every_second = [&](const Tensor& x) {
        return OpTest("Slice", 13)
            .in(x)
            .in(vec<int64_t>({start}))
            .in(vec<int64_t>({w}))
            .in(vec<int64_t>({1}))
            .in(vec<int64_t>({2}))
            .run1();
      };
      VF xs(static_cast<size_t>(3 * w));
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) * 0.5f - 7.f;
      const Tensor y = every_second(tensor<float>({3, w}, xs));
      const int64_t n = (w - start + 1) / 2;
      REQUIRE(y.dims() == std::vector<int64_t>{3, n});
      VF want;
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t j = 0; j < n; ++j) want.push_back(xs[static_cast<size_t>(r * w + start + 2 * j)]);
      CHECK(vals<float>(y) == want);
      std::vector<int32_t> xi(xs.size());
      for (size_t i = 0; i < xi.size(); ++i) xi[i] = static_cast<int32_t>(i) - 100;
      const Tensor yi = every_second(tensor<int32_t>({3, w}, xi));
      CHECK(yi.data<int32_t>()[static_cast<size_t>(n - 1)] == xi[static_cast<size_t>(start + 2 * (n - 1))]);
      CHECK(yi.data<int32_t>()[static_cast<size_t>(2 * n)] == xi[static_cast<size_t>(2 * w + start)]);
    }
}

TEST_CASE(
    "tensor_ops: Pad constant, reflect, edge and wrap; attribute form; axes input; cropping") {
  Tensor x = tensor<float>({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  Tensor pads = vec<int64_t>({0, 2, 0, 0});
  CHECK(vals<float>(OpTest("Pad", 13)
                        .s("mode", "constant")
                        .in(x)
                        .in(pads)
                        .in(Tensor::scalar<float>(0.f))
                        .run1()) == VF{0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f});
  CHECK(vals<float>(OpTest("Pad", 13).s("mode", "reflect").in(x).in(pads).run1()) ==
        VF{1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f});
  CHECK(vals<float>(OpTest("Pad", 13).s("mode", "edge").in(x).in(pads).run1()) ==
        VF{1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f});
  Tensor w = OpTest("Pad", 19).s("mode", "wrap").in(x).in(vec<int64_t>({1, 1, 0, 0})).run1();
  CHECK(w.dims() == V64{4, 3});
  CHECK(vals<float>(w) ==
        VF{5.7f, 4.5f, 5.7f, 1.2f, 1.0f, 1.2f, 3.4f, 2.3f, 3.4f, 5.7f, 4.5f, 5.7f});
  Tensor old =
      OpTest("Pad", 2).is("pads", {1, 0, 0, 0}).f("value", 9.f).in(tensor<int32_t>({1, 2}, {1, 2})).run1();
  CHECK(vals<int32_t>(old) == std::vector<int32_t>{9, 9, 1, 2});
  Tensor ax =
      OpTest("Pad", 18).in(x).in(vec<int64_t>({1, 0})).in(Tensor::scalar<float>(-1.f)).in(vec<int64_t>({-1})).run1();
  CHECK(vals<float>(ax) == VF{-1, 1.0f, 1.2f, -1, 2.3f, 3.4f, -1, 4.5f, 5.7f});
  Tensor crop = OpTest("Pad", 13).in(x).in(vec<int64_t>({-1, 0, 0, -1})).run1();
  CHECK(vals<float>(crop) == VF{2.3f, 4.5f});
  CHECK_THROWS_AS(OpTest("Pad", 13).in(x).in(vec<int64_t>({1, 1})).run(), ModelError);
  CHECK_THROWS_AS(OpTest("Pad", 13).s("mode", "mirror").in(x).in(pads).run(), ModelError);
}

TEST_CASE("tensor_ops: Trilu upper/lower with k, and ReverseSequence") {
  Tensor x = tensor<int64_t>({3, 3}, {4, 7, 3, 1, 2, 8, 9, 5, 1});
  CHECK(vals<int64_t>(OpTest("Trilu", 14).in(x).run1()) == V64{4, 7, 3, 0, 2, 8, 0, 0, 1});
  CHECK(vals<int64_t>(OpTest("Trilu", 14).i("upper", 0).in(x).in(Tensor::scalar<int64_t>(-1)).run1()) ==
        V64{0, 0, 0, 1, 0, 0, 9, 5, 0});
  CHECK(vals<int64_t>(OpTest("Trilu", 14).in(x).in(Tensor::scalar<int64_t>(5)).run1()) == V64(9, 0));

  std::vector<float> v(16);
  for (int k = 0; k < 16; ++k) v[static_cast<size_t>(k)] = static_cast<float>(k);
  Tensor rs = OpTest("ReverseSequence", 10)
                  .i("time_axis", 0)
                  .i("batch_axis", 1)
                  .in(tensor<float>({4, 4}, v))
                  .in(vec<int64_t>({4, 3, 2, 1}))
                  .run1();
  CHECK(vals<float>(rs) == VF{12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15});
  CHECK_THROWS_AS(OpTest("ReverseSequence", 10).in(tensor<float>({4, 4}, v)).in(vec<int64_t>({5, 1, 1, 1})).run(),
                  ModelError);
}

// ---------------------------------------------------------------- gather / scatter

TEST_CASE("tensor_ops: Gather, GatherElements and GatherND with negative indices and batch_dims") {
  Tensor x = tensor<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor g = OpTest("Gather", 13).i("axis", 1).in(x).in(tensor<int32_t>({2}, {-1, 0})).run1();
  CHECK(g.dims() == V64{2, 2});
  CHECK(vals<uint8_t>(g) == std::vector<uint8_t>{3, 1, 6, 4});
  Tensor g0 = OpTest("Gather", 13).in(x).in(Tensor::scalar<int64_t>(1)).run1();
  CHECK(g0.dims() == V64{3});
  CHECK(vals<uint8_t>(g0) == std::vector<uint8_t>{4, 5, 6});
  CHECK_THROWS_AS(OpTest("Gather", 13).in(x).in(vec<int64_t>({2})).run(), ModelError);

  Tensor ge = OpTest("GatherElements", 13)
                  .i("axis", 1)
                  .in(tensor<float>({2, 2}, {1, 2, 3, 4}))
                  .in(tensor<int64_t>({2, 2}, {0, 0, 1, 0}))
                  .run1();
  CHECK(vals<float>(ge) == VF{1, 1, 4, 3});

  Tensor nd = OpTest("GatherND", 13)
                  .i("batch_dims", 1)
                  .in(tensor<int32_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}))
                  .in(tensor<int64_t>({2, 1}, {1, 0}))
                  .run1();
  CHECK(nd.dims() == V64{2, 2});
  CHECK(vals<int32_t>(nd) == std::vector<int32_t>{2, 3, 4, 5});
  Tensor nd0 = OpTest("GatherND", 13)
                   .in(tensor<int32_t>({2, 2}, {0, 1, 2, 3}))
                   .in(tensor<int64_t>({2, 2}, {0, 0, 1, 1}))
                   .run1();
  CHECK(vals<int32_t>(nd0) == std::vector<int32_t>{0, 3});
}

TEST_CASE("tensor_ops: ScatterElements with reductions, Scatter and ScatterND") {
  Tensor data = tensor<float>({1, 5}, {1, 2, 3, 4, 5});
  Tensor idx = tensor<int64_t>({1, 2}, {1, 1});
  Tensor upd = tensor<float>({1, 2}, {1.1f, 2.1f});
  Tensor add =
      OpTest("ScatterElements", 16).i("axis", 1).s("reduction", "add").in(data).in(idx).in(upd).run1();
  CHECK(vals<float>(add) == VF{1, 2 + 1.1f + 2.1f, 3, 4, 5});
  Tensor mx =
      OpTest("ScatterElements", 18).i("axis", 1).s("reduction", "max").in(data).in(idx).in(upd).run1();
  CHECK(vals<float>(mx) == VF{1, 2.1f, 3, 4, 5});
  Tensor none =
      OpTest("Scatter", 9).i("axis", 1).in(data).in(tensor<int64_t>({1, 2}, {1, -2})).in(upd).run1();
  CHECK(vals<float>(none) == VF{1, 1.1f, 3, 2.1f, 5});
  CHECK_THROWS_AS(OpTest("ScatterElements", 18).s("reduction", "avg").in(data).in(idx).in(upd).run(),
                  ModelError);

  Tensor nd = OpTest("ScatterND", 13)
                  .in(tensor<int32_t>({8}, {1, 2, 3, 4, 5, 6, 7, 8}))
                  .in(tensor<int64_t>({4, 1}, {4, 3, 1, 7}))
                  .in(tensor<int32_t>({4}, {9, 10, 11, 12}))
                  .run1();
  CHECK(vals<int32_t>(nd) == std::vector<int32_t>{1, 11, 3, 10, 9, 6, 7, 12});
  Tensor mul = OpTest("ScatterND", 16)
                   .s("reduction", "mul")
                   .in(tensor<int32_t>({2, 2}, {1, 2, 3, 4}))
                   .in(tensor<int64_t>({2, 1}, {1, 1}))
                   .in(tensor<int32_t>({2, 2}, {2, 3, 10, 10}))
                   .run1();
  CHECK(vals<int32_t>(mul) == std::vector<int32_t>{1, 2, 60, 120});
}

TEST_CASE("tensor_ops: OneHot, Compress and NonZero") {
  Tensor oh = OpTest("OneHot", 11)
                  .in(tensor<int64_t>({4}, {0, 2, -1, 5}))
                  .in(Tensor::scalar<float>(3.f))
                  .in(tensor<float>({2}, {0.f, 1.f}))
                  .run1();
  CHECK(oh.dims() == V64{4, 3});
  CHECK(vals<float>(oh) == VF{1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0});
  Tensor oh0 = OpTest("OneHot", 11)
                   .i("axis", 0)
                   .in(tensor<int32_t>({2}, {1, 0}))
                   .in(Tensor::scalar<int64_t>(2))
                   .in(tensor<int32_t>({2}, {-1, 7}))
                   .run1();
  CHECK(vals<int32_t>(oh0) == std::vector<int32_t>{-1, 7, 7, -1});

  Tensor x = tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor cond = bools({3}, {0, 1, 1});
  CHECK(vals<float>(OpTest("Compress", 11).i("axis", 0).in(x).in(cond).run1()) == VF{3, 4, 5, 6});
  CHECK(vals<float>(OpTest("Compress", 11).in(x).in(bools({5}, {0, 1, 0, 0, 1})).run1()) == VF{2, 5});
  CHECK_THROWS_AS(OpTest("Compress", 11).i("axis", 1).in(x).in(cond).run(), ModelError);

  Tensor nz = OpTest("NonZero", 13).in(tensor<int32_t>({2, 2}, {1, 0, 1, 1})).run1();
  CHECK(nz.dims() == V64{2, 3});
  CHECK(vals<int64_t>(nz) == V64{0, 1, 1, 0, 0, 1});
}

TEST_CASE("tensor_ops: Unique sorted, unsorted and along an axis, all four outputs") {
  Tensor x = tensor<float>({6}, {2, 1, 1, 3, 4, 3});
  auto s = OpTest("Unique", 11).outs(4).in(x).run();
  CHECK(vals<float>(s[0]) == VF{1, 2, 3, 4});
  CHECK(vals<int64_t>(s[1]) == V64{1, 0, 3, 4});
  CHECK(vals<int64_t>(s[2]) == V64{1, 0, 0, 2, 3, 2});
  CHECK(vals<int64_t>(s[3]) == V64{2, 1, 2, 1});
  auto u = OpTest("Unique", 11).i("sorted", 0).outs(4).in(x).run();
  CHECK(vals<float>(u[0]) == VF{2, 1, 3, 4});
  CHECK(vals<int64_t>(u[1]) == V64{0, 1, 3, 4});
  CHECK(vals<int64_t>(u[2]) == V64{0, 1, 1, 2, 3, 2});
  CHECK(vals<int64_t>(u[3]) == V64{1, 2, 2, 1});
  auto a = OpTest("Unique", 11)
               .i("axis", 0)
               .outs(4)
               .in(tensor<int64_t>({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4}))
               .run();
  CHECK(a[0].dims() == V64{2, 3});
  CHECK(vals<int64_t>(a[0]) == V64{1, 0, 0, 2, 3, 4});
  CHECK(vals<int64_t>(a[1]) == V64{0, 2});
  CHECK(vals<int64_t>(a[2]) == V64{0, 0, 1});
  CHECK(vals<int64_t>(a[3]) == V64{2, 1});
  auto st = OpTest("Unique", 11).in(Tensor::from_strings({3}, {"b", "a", "b"})).run1();
  CHECK(st.strings() == std::vector<std::string>{"a", "b"});
  CHECK_THROWS_AS(OpTest("Unique", 11).i("axis", 2).in(x).run(), ModelError);
}

TEST_CASE("tensor_ops: packed sub-byte dtypes are refused with UnsupportedError") {
  Tensor q = Tensor::allocate(DType::I4, {2, 2});
  CHECK_THROWS_AS(OpTest("Transpose", 21).in(q).run(), UnsupportedError);
}

TEST_CASE(
    "tensor_ops: CenterCropPad crops and pads around the centre; TensorScatter linear and "
    "circular") {
  std::vector<float> v(12);
  for (int k = 0; k < 12; ++k) v[static_cast<size_t>(k)] = static_cast<float>(k);
  Tensor c = OpTest("CenterCropPad", 18).in(tensor<float>({3, 4}, v)).in(vec<int64_t>({2, 6})).run1();
  CHECK(c.dims() == V64{2, 6});
  CHECK(vals<float>(c) == VF{0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 7, 0});
  Tensor a = OpTest("CenterCropPad", 18).is("axes", {1}).in(tensor<float>({3, 4}, v)).in(vec<int64_t>({1})).run1();
  CHECK(vals<float>(a) == VF{1, 5, 9});

  Tensor past = tensor<float>({2, 3, 1}, VF(6, 0.f)), upd = tensor<float>({2, 2, 1}, {1, 2, 3, 4});
  Tensor circ =
      OpTest("TensorScatter", 24).s("mode", "circular").in(past).in(upd).in(vec<int64_t>({0, 2})).run1();
  CHECK(vals<float>(circ) == VF{1, 2, 0, 4, 0, 3});
  Tensor lin = OpTest("TensorScatter", 24).in(past).in(upd).run1();
  CHECK(vals<float>(lin) == VF{1, 2, 0, 3, 4, 0});
  CHECK_THROWS_AS(OpTest("TensorScatter", 24).in(past).in(upd).in(vec<int64_t>({0, 2})).run(), ModelError);
}

TEST_CASE(
    "tensor_ops: Transpose matches a naive index mapping for every permutation of a 4-D tensor") {
  const V64 dims{3, 17, 5, 19};  // not multiples of the copy tile
  std::vector<int64_t> x(3 * 17 * 5 * 19);
  for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<int64_t>(k);
  V64 perm{0, 1, 2, 3};
  int checked = 0;
  do {
    Tensor y = OpTest("Transpose", 13).is("perm", perm).in(tensor<int64_t>(dims, x)).run1();
    V64 od(4), is{17 * 5 * 19, 5 * 19, 19, 1};
    for (size_t i = 0; i < 4; ++i) od[i] = dims[static_cast<size_t>(perm[i])];
    REQUIRE(y.dims() == od);
    auto d = vals<int64_t>(y);
    bool ok = true;
    int64_t flat = 0;
    for (int64_t a = 0; a < od[0]; ++a)
      for (int64_t b = 0; b < od[1]; ++b)
        for (int64_t c = 0; c < od[2]; ++c)
          for (int64_t e = 0; e < od[3]; ++e, ++flat) {
            const int64_t src =
                a * is[static_cast<size_t>(perm[0])] + b * is[static_cast<size_t>(perm[1])] +
                c * is[static_cast<size_t>(perm[2])] + e * is[static_cast<size_t>(perm[3])];
            ok = ok && d[static_cast<size_t>(flat)] == src;
          }
    CHECK(ok);
    ++checked;
  } while (std::next_permutation(perm.begin(), perm.end()));
  CHECK(checked == 24);
}

TEST_CASE("tensor_ops: hostile sizes give ModelError, not overflow") {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  Tensor r = tensor<float>({4}, {0, 1, 2, 3});
  CHECK(vals<float>(
            OpTest("Slice", 13).in(r).in(vec<int64_t>({0})).in(vec<int64_t>({kMax})).none().in(vec<int64_t>({kMax})).run1()) ==
        VF{0});
  CHECK(vals<float>(OpTest("Slice", 13)
                        .in(r)
                        .in(vec<int64_t>({-1}))
                        .in(vec<int64_t>({-kMax}))
                        .none()
                        .in(vec<int64_t>({std::numeric_limits<int64_t>::min()}))
                        .run1()) == VF{3});
  CHECK_THROWS_AS(OpTest("Tile", 13).in(r).in(vec<int64_t>({kMax})).run(), ModelError);
  CHECK_THROWS_AS(OpTest("Reshape", 13).in(r).in(vec<int64_t>({kMax, kMax, -1})).run(), ModelError);
  CHECK_THROWS_AS(OpTest("Range", 11)
                      .in(Tensor::scalar<int64_t>(-kMax))
                      .in(Tensor::scalar<int64_t>(kMax))
                      .in(Tensor::scalar<int64_t>(1))
                      .run(),
                  ModelError);
}

TEST_CASE("tensor_ops: Identity passes sequences and empty optionals through") {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 16}};
  m.graph = std::make_unique<ir::Graph>();
  ir::Value& x = m.graph->add_value("x");
  x.is_graph_input = true;
  m.graph->inputs.push_back(&x);
  ir::Node& n = m.graph->add_node("Identity", "", "id", {&x}, {"y"});
  n.since_version = 16;
  m.graph->outputs.push_back(n.outputs[0]);
  backends::Executor ex(m);
  auto seq = ex.run({{"x", backends::RValue::sequence({tensor<float>({1}, {1.f}), tensor<float>({2}, {2.f, 3.f})})}});
  REQUIRE(seq.size() == 1);
  CHECK(seq[0].kind == backends::RValue::Kind::Sequence);
  REQUIRE(seq[0].seq.size() == 2);
  CHECK(vals<float>(seq[0].seq[1]) == VF{2.f, 3.f});
  auto none = ex.run({{"x", backends::RValue::none()}});
  CHECK(none[0].kind == backends::RValue::Kind::None);
}

TEST_CASE("tensor_ops: batched 2-D Transpose of 4-byte elements (whole 16x16 register blocks and tails)") {
  for (const V64& dims : {V64{2, 64, 96}, V64{1, 85, 71}, V64{3, 33, 32}, V64{1, 16, 16}}) {
    CAPTURE(dims[1]);
    CAPTURE(dims[2]);
    const int64_t B = dims[0], R = dims[1], C = dims[2];
    std::vector<int32_t> x(static_cast<size_t>(B * R * C));
    for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<int32_t>(k * 7 + 1);
    Tensor y = OpTest("Transpose", 13).is("perm", {0, 2, 1}).in(tensor<int32_t>(dims, x)).run1();
    REQUIRE(y.dims() == V64{B, C, R});
    auto d = vals<int32_t>(y);
    int bad = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < R; ++r)
          bad += d[static_cast<size_t>((b * C + c) * R + r)] != x[static_cast<size_t>((b * R + r) * C + c)];
    CHECK(bad == 0);
  }
}
