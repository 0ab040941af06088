// ir/shape_inference: a few direct cases per rule family (elementwise and broadcast, conv and
// pooling, gemm/matmul, data movement, resize, reductions, shape ops), and what stays unknown.
#include <doctest/doctest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx-ml.pb.h>

#include "ir/errors.h"
#include "ir/onnx_io.h"
#include "ir/op_facts.h"
#include "ir/shape_inference/shape_inference.h"

using namespace mcc;
using Dims = std::vector<int64_t>;

namespace {

ir::Model parse(const std::string& body, int opset = 13) {
  const std::string text = "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\n" + body;
  onnx::ModelProto mp;
  auto st = onnx::OnnxParser::Parse(mp, text.c_str());
  if (!st.IsOK()) throw ModelError("onnx text: " + st.ErrorMessage());
  std::string bytes;
  mp.SerializeToString(&bytes);
  return ir::load_model_from_bytes(std::move(bytes), ".");
}

/// Inference result for the value `name` of the main graph.
ir::TypeShape infer(const ir::Model& m, const std::string& name) {
  const ir::Value* v = m.graph->find_value(name);
  REQUIRE(v);
  return ir::ShapeInference(m).of(v);
}

}  // namespace

TEST_CASE("shape inference: same-shape, bool-output and broadcasting ops") {
  const ir::Model m = parse(R"(
    g (float[2,3,4] X, float[3,1] B, float[5] Z) => (float[1] Y) {
      r = Relu(X)
      s = Swish(X)
      n = IsNaN(X)
      a = Add(X, B)
      e = Less(X, B)
      w = Where(e, X, B)
      bad = Add(X, Z)
      Y = ReduceMax<keepdims = 0, axes = [0, 1, 2]>(r)
    })");
  CHECK(infer(m, "r").dims == Dims{2, 3, 4});
  CHECK(infer(m, "r").dtype == ir::DType::F32);
  CHECK(infer(m, "s").dims == Dims{2, 3, 4});  // Swish: same shape (op facts)
  CHECK(infer(m, "n").dtype == ir::DType::Bool);
  CHECK(infer(m, "a").dims == Dims{2, 3, 4});
  CHECK(infer(m, "e").dtype == ir::DType::Bool);
  CHECK(infer(m, "w").dtype == ir::DType::F32);  // Where: type of X, not of the condition
  CHECK(infer(m, "w").dims == Dims{2, 3, 4});
  CHECK_FALSE(infer(m, "bad").dims);  // 4 vs 5 does not broadcast: left to the runtime
}

TEST_CASE("shape inference: Conv and pooling windows") {
  const ir::Model m = parse(R"(
    g (float[1,3,8,8] X, float[16,3,3,3] W) => (float[1,16,1,1] Y) {
      c = Conv<pads = [1, 1, 1, 1], strides = [2, 2]>(X, W)
      p = MaxPool<kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1>(c)
      s = AveragePool<kernel_shape = [2, 2], auto_pad = "SAME_UPPER", strides = [3, 3]>(X)
      Y = GlobalAveragePool(c)
    })");
  CHECK(infer(m, "c").dims == Dims{1, 16, 4, 4});
  CHECK(infer(m, "p").dims == Dims{1, 16, 2, 2});
  CHECK(infer(m, "s").dims == Dims{1, 3, 3, 3});
}

TEST_CASE("shape inference: Gemm and MatMul") {
  const ir::Model m = parse(R"(
    g (float[4,8] A, float[16,8] B, float[2,1,4,8] X, float[3,8,5] W, float[8] V) => (float[4,16] Y) {
      Y = Gemm<transB = 1>(A, B)
      mm = MatMul(X, W)
      mv = MatMul(X, V)
      bad = MatMul(A, A)
    })");
  CHECK(infer(m, "mm").dims == Dims{2, 3, 4, 5});
  CHECK(infer(m, "mv").dims == Dims{2, 1, 4});
  CHECK_FALSE(infer(m, "bad").dims);
}

TEST_CASE("shape inference: data movement") {
  const ir::Model m = parse(R"(
    g (float[2,3,4] X, int64[5] I) => (float[1] Y)
    <int64[2] S = {6, -1}, int64[1] A0 = {0}, int64[1] E = {-1}, int64[1] ST = {-2},
     int64[6] P = {0, 1, 0, 0, 1, 0}, int64[3] R = {1, 2, 1}, int64[2] SP = {1, 3}> {
      rs = Reshape(X, S)
      fl = Flatten<axis = 2>(X)
      tr = Transpose<perm = [2, 0, 1]>(X)
      cc = Concat<axis = -1>(X, X)
      un = Unsqueeze(X, A0)
      sq = Squeeze(un, A0)
      sl = Slice(X, E, A0, E, ST)
      ga = Gather<axis = 1>(X, I)
      s1, s2 = Split<axis = 1>(X)
      s3, s4 = Split<axis = 2>(X, SP)
      pd = Pad(X, P)
      tl = Tile(X, R)
      Y = ReduceSum<keepdims = 0>(rs, A0)
    })");
  CHECK(infer(m, "rs").dims == Dims{6, 4});
  CHECK(infer(m, "fl").dims == Dims{6, 4});
  CHECK(infer(m, "tr").dims == Dims{4, 2, 3});
  CHECK(infer(m, "cc").dims == Dims{2, 3, 8});
  CHECK(infer(m, "un").dims == Dims{1, 2, 3, 4});
  CHECK(infer(m, "sq").dims == Dims{2, 3, 4});
  CHECK(infer(m, "sl").dims == Dims{2, 3, 2});  // start -1, end 0, step -2 on the last axis
  CHECK(infer(m, "ga").dims == Dims{2, 5, 4});
  CHECK(infer(m, "s1").dims == Dims{2, 2, 4});  // 3 split in 2: ceil first
  CHECK(infer(m, "s2").dims == Dims{2, 1, 4});
  CHECK(infer(m, "s4").dims == Dims{2, 3, 3});
  CHECK(infer(m, "pd").dims == Dims{2, 5, 4});
  CHECK(infer(m, "tl").dims == Dims{2, 6, 4});
}

TEST_CASE("shape inference: Resize by scales and sizes, Expand") {
  const ir::Model m = parse(R"(
    g (float[1,3,4,4] X) => (float[1,3,8,10] Y)
    <float[4] SC = {1.0, 1.0, 2.0, 2.5}, int64[4] SZ = {1, 3, 5, 6}, int64[5] ES = {2, 1, 3, 1, 1}> {
      Y = Resize<mode = "nearest">(X, , SC)
      rz = Resize<mode = "nearest">(X, , , SZ)
      ex = Expand(X, ES)
    })");
  CHECK(infer(m, "Y").dims == Dims{1, 3, 8, 10});  // floor(4 * 2.5)
  CHECK(infer(m, "rz").dims == Dims{1, 3, 5, 6});
  CHECK(infer(m, "ex").dims == Dims{2, 1, 3, 4, 4});
}

TEST_CASE("shape inference: reductions and ArgMax") {
  const ir::Model m = parse(R"(
    g (float[2,3,4] X) => (float[1] Y) {
      rm = ReduceMean<axes = [-1]>(X)
      rk = ReduceMax<axes = [1], keepdims = 0>(X)
      ra = ReduceL2(X)
      am = ArgMax<axis = 1, keepdims = 0>(X)
      Y = ReduceMin<keepdims = 0, axes = [0, 1, 2]>(X)
    })", 13);
  CHECK(infer(m, "rm").dims == Dims{2, 3, 1});
  CHECK(infer(m, "rk").dims == Dims{2, 4});
  CHECK(infer(m, "ra").dims == Dims{1, 1, 1});
  CHECK(infer(m, "am").dims == Dims{2, 4});
  CHECK(infer(m, "am").dtype == ir::DType::I64);
}

TEST_CASE("shape inference: Shape, Size, ConstantOfShape, Cast") {
  const ir::Model m = parse(R"(
    g (float[2,3,4] X) => (float[1] Y) <int64[2] CS = {5, 2}> {
      sh = Shape<start = 1>(X)
      sz = Size(X)
      co = ConstantOfShape(CS)
      ca = Cast<to = 10>(X)
      Y = ReduceMin<keepdims = 0, axes = [0, 1, 2]>(X)
    })");
  CHECK(infer(m, "sh").dims == Dims{2});
  CHECK(infer(m, "sh").dtype == ir::DType::I64);
  CHECK(infer(m, "sz").dims == Dims{});
  CHECK(infer(m, "co").dims == Dims{5, 2});
  CHECK(infer(m, "co").dtype == ir::DType::F32);
  CHECK(infer(m, "ca").dtype == ir::DType::F16);
  CHECK(infer(m, "ca").dims == Dims{2, 3, 4});
}

TEST_CASE("shape inference leaves symbolic dims, data-dependent ops and other domains unknown") {
  const ir::Model m = parse(R"(
    g (float[N,3] X, float[2,3] Z) => (float[1] Y) {
      r = Relu(X)
      nz = NonZero(Z)
      Y = ReduceMin<keepdims = 0, axes = [0, 1]>(Z)
    })");
  CHECK_FALSE(infer(m, "r").dims);
  CHECK(infer(m, "r").dtype == ir::DType::F32);  // the type is still known
  CHECK_FALSE(infer(m, "nz").dims);
  CHECK(ir::shape_kind("NonZero") == ir::ShapeKind::None);
}
