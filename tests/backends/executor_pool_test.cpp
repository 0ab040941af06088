// Executor buffer pool: a released intermediate's buffer is reused for a later tensor of up to
// half its size (the tensor then sees exactly its own bytes); values are right with the reused
// bytes poisoned, and again on the next run, which reuses the buffers once more.
#include <doctest/doctest.h>

#include <string>
#include <typeinfo>

#include "backends/executor.h"
#include "support/graph_builder.h"

using namespace mcc;

TEST_CASE("Executor: a smaller tensor reuses a released larger buffer, holding exactly its own bytes") {
  const ir::Model m = test::parse_onnx_text(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8,16,16] x) => (float[1,5,16,16] y) <int64[1] st = {0}, int64[1] en = {5}, int64[1] ax = {1}> {
  a = Relu(x)
  b = Neg(a)
  y = Slice(b, st, en, ax)
}
)");
  backends::ExecOptions o;
  o.threads = 1;
  o.fuse = false;               // a must be a tensor of its own, released after b
  o.poison_overwritten = true;  // a reused buffer starts as 0xFF bytes, never as old values
  backends::Executor ex(m, o);
  const ir::Tensor x = test::random_tensor({1, 8, 16, 16}, 3);
  for (int run = 0; run < 2; ++run) {
    CAPTURE(run);
    const ir::Tensor y = ex.run({{"x", backends::RValue::of(x)}}).at(0).tensor;
    REQUIRE(y.dims() == std::vector<int64_t>{1, 5, 16, 16});
    CHECK(y.buffer()->size() == y.nbytes());
    // 5 x 256 floats (5 KiB) fit in the 8 KiB buffer a released: allocate handed out its prefix.
    CHECK(std::string(typeid(*y.buffer()).name()).find("PrefixBuffer") != std::string::npos);
    bool same = true;
    auto xv = x.data<float>();
    auto yv = y.data<float>();
    for (size_t i = 0; i < yv.size(); ++i) same = same && yv[i] == -std::max(xv[i], 0.f);
    CHECK(same);
  }
}

TEST_CASE("Executor: an output the caller dropped lends its memory to the next run; one kept is never touched") {
  const ir::Model m = test::parse_onnx_text(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[64,64] x) => (float[64,64] y) {
  y = Neg(x)
}
)");
  backends::ExecOptions o;
  o.threads = 1;
  backends::Executor ex(m, o);
  const ir::Tensor x1 = test::random_tensor({64, 64}, 5), x2 = test::random_tensor({64, 64}, 6);
  auto run = [&](const ir::Tensor& x) { return ex.run({{"x", backends::RValue::of(x)}}).at(0).tensor; };
  auto negates = [](const ir::Tensor& y, const ir::Tensor& x) {
    bool ok = true;
    for (size_t i = 0; i < y.data<float>().size(); ++i) ok = ok && y.data<float>()[i] == -x.data<float>()[i];
    return ok;
  };
  const void* first = nullptr;
  {
    const ir::Tensor y = run(x1);
    first = y.raw();
    CHECK(negates(y, x1));
  }  // dropped here
  const ir::Tensor kept = run(x2);
  CHECK(kept.raw() == first);  // the dropped output's buffer, not fresh pages
  CHECK(negates(kept, x2));
  const ir::Tensor next = run(x1);
  CHECK(next.raw() != kept.raw());  // still held by the caller: not reused
  CHECK(negates(kept, x2));
  CHECK(negates(next, x1));
}
