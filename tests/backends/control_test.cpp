// Control flow, sequence and optional kernels: If, Loop, Scan (opsets 8 and 9+), the sequence
// ops and the optional ops, run through the executor on small graphs with hand-computed results.
#include <doctest/doctest.h>

#include "backends/cpu/kernels/control_kernels.h"
#include "control_test_util.h"

using namespace mcc;
using namespace mcc::test;

TEST_CASE("If runs the chosen branch, which reads outer-scope values") {
  for (int c : {1, 0}) {
    ModelBuilder b(13);
    ir::Value* cond = b.input("cond", bools({}, {c}));
    ir::Value* x = b.input("x", tensor<float>({2}, {1.f, 2.f}));
    ir::Value* y = b.input("y", tensor<float>({2}, {10.f, 20.f}));
    auto then_g = b.subgraph("then", {});
    then_g->outputs.push_back(b.node(*then_g, "Add", {x, y}, {"sum"})[0]);
    auto else_g = b.subgraph("else", {});
    else_g->outputs.push_back(y);  // a branch may return an outer value directly
    b.output(b.node("If", {cond}, {"out"}, {attr_g("then_branch", then_g), attr_g("else_branch", else_g)})[0]);
    auto out = b.run();
    REQUIRE(out.size() == 1);
    CHECK(values(out[0].tensor) == (c ? std::vector<double>{11, 22} : std::vector<double>{10, 20}));
  }
}

TEST_CASE("If rejects a condition with more than one element") {
  ModelBuilder b(13);
  ir::Value* cond = b.input("cond", bools({2}, {1, 0}));
  ir::Value* x = b.input("x", tensor<int64_t>({1}, {5}));
  auto then_g = b.subgraph("then", {});
  then_g->outputs.push_back(x);
  auto else_g = b.subgraph("else", {});
  else_g->outputs.push_back(x);
  b.output(b.node("If", {cond}, {"out"}, {attr_g("then_branch", then_g), attr_g("else_branch", else_g)})[0]);
  CHECK_THROWS_AS(b.run(), ModelError);
}

TEST_CASE("Loop with trip count: loop-carried value and stacked scan output") {
  ModelBuilder b(13);
  ir::Value* m = b.input("M", ir::Tensor::scalar<int64_t>(3));
  ir::Value* cond = b.input("cond", bools({}, {1}));
  ir::Value* y0 = b.input("y0", tensor<float>({1}, {1.f}));
  ir::Value* step = b.input("step", tensor<float>({1}, {2.f}));
  auto body = b.subgraph("body", {"iter", "cond_in", "y_in"});
  ir::Value* y_out = b.node(*body, "Add", {body->inputs[2], step}, {"y_out"})[0];
  body->outputs = {body->inputs[1], y_out, y_out};
  auto outs = b.node("Loop", {m, cond, y0}, {"y_final", "y_scan"}, {attr_g("body", body)});
  b.output(outs[0]);
  b.output(outs[1]);
  auto r = b.run();
  CHECK(values(r[0].tensor) == std::vector<double>{7});
  CHECK(r[1].tensor.dims() == std::vector<int64_t>{3, 1});
  CHECK(values(r[1].tensor) == std::vector<double>{3, 5, 7});
}

TEST_CASE("Loop with zero trips returns the initial values and an empty scan output") {
  ModelBuilder b(13);
  ir::Value* m = b.input("M", ir::Tensor::scalar<int64_t>(0));
  ir::Value* y0 = b.input("y0", tensor<int32_t>({2}, {4, 5}));
  auto body = b.subgraph("body", {"iter", "cond_in", "y_in"});
  body->inputs[2]->dtype = ir::DType::I32;
  body->outputs = {body->inputs[1], body->inputs[2], body->inputs[2]};
  auto outs = b.node("Loop", {m, nullptr, y0}, {"y_final", "y_scan"}, {attr_g("body", body)});
  b.output(outs[0]);
  b.output(outs[1]);
  auto r = b.run();
  CHECK(values(r[0].tensor) == std::vector<double>{4, 5});
  CHECK(r[1].tensor.numel() == 0);
  CHECK(r[1].tensor.dims()[0] == 0);
}

TEST_CASE("Loop carries a sequence and uses the iteration number") {
  ModelBuilder b(13);
  ir::Value* m = b.input("M", ir::Tensor::scalar<int64_t>(4));
  ir::Value* s0 = b.input("s0", RValue::sequence({}));
  auto body = b.subgraph("body", {"iter", "cond_in", "s_in"});
  ir::Value* s_out = b.node(*body, "SequenceInsert", {body->inputs[2], body->inputs[0]}, {"s_out"})[0];
  body->outputs = {body->inputs[1], s_out};
  auto outs = b.node("Loop", {m, nullptr, s0}, {"s_final"}, {attr_g("body", body)});
  b.output(outs[0]);
  auto r = b.run();
  REQUIRE(r[0].kind == RValue::Kind::Sequence);
  REQUIRE(r[0].seq.size() == 4);
  for (int64_t i = 0; i < 4; ++i) CHECK(r[0].seq[i].data<int64_t>()[0] == i);
}

TEST_CASE("Loop stops when the body's condition turns false") {
  ModelBuilder b(13);
  ir::Value* cond = b.input("cond", bools({}, {1}));
  ir::Value* limit = b.input("limit", ir::Tensor::scalar<int64_t>(2));
  auto body = b.subgraph("body", {"iter", "cond_in"});
  ir::Value* c = b.node(*body, "Less", {body->inputs[0], limit}, {"c"})[0];
  body->outputs = {c, body->inputs[0]};
  b.output(b.node("Loop", {nullptr, cond}, {"iters"}, {attr_g("body", body)})[0]);
  auto r = b.run();
  // Iterations 0, 1 and 2 run; the third returns cond = (2 < 2) = false.
  CHECK(values(r[0].tensor) == std::vector<double>{0, 1, 2});
}

TEST_CASE("Loop rejects a body with the wrong number of inputs") {
  ModelBuilder b(13);
  ir::Value* m = b.input("M", ir::Tensor::scalar<int64_t>(1));
  ir::Value* y0 = b.input("y0", tensor<float>({1}, {1.f}));
  auto body = b.subgraph("body", {"iter", "cond_in"});
  body->outputs = {body->inputs[1], body->inputs[0]};
  b.output(b.node("Loop", {m, nullptr, y0}, {"y"}, {attr_g("body", body)})[0]);
  CHECK_THROWS_AS(b.run(), ModelError);
}

TEST_CASE("Scan-9 running sum with reversed input and a scan output on axis 1") {
  ModelBuilder b(11);
  ir::Value* init = b.input("init", tensor<float>({2}, {0.f, 0.f}));
  ir::Value* x = b.input("x", tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  auto body = b.subgraph("body", {"sum_in", "next"});
  ir::Value* sum = b.node(*body, "Add", {body->inputs[0], body->inputs[1]}, {"sum_out"})[0];
  body->outputs = {sum, sum};
  auto outs = b.node("Scan", {init, x}, {"final", "partial"},
                     {attr_g("body", body), attr_i("num_scan_inputs", 1), attr_is("scan_input_directions", {1}),
                      attr_is("scan_output_axes", {1})});
  b.output(outs[0]);
  b.output(outs[1]);
  auto r = b.run();
  CHECK(values(r[0].tensor) == std::vector<double>{9, 12});
  // Partial sums over rows 2, 1, 0: [5,6], [8,10], [9,12]; stacked on axis 1 -> [2, 3].
  CHECK(r[1].tensor.dims() == std::vector<int64_t>{2, 3});
  CHECK(values(r[1].tensor) == std::vector<double>{5, 8, 9, 6, 10, 12});
}

TEST_CASE("Scan-8 runs each batch entry over its sequence, zero-padding past sequence_lens") {
  ModelBuilder b(8);
  ir::Value* lens = b.input("lens", tensor<int32_t>({2}, {2, 1}));
  ir::Value* init = b.input("init", tensor<int64_t>({2, 1}, {0, 100}));
  ir::Value* x = b.input("x", tensor<int64_t>({2, 2, 1}, {1, 2, 3, 4}));
  auto body = b.subgraph("body", {"s_in", "v"});
  ir::Value* sum = b.node(*body, "Add", {body->inputs[0], body->inputs[1]}, {"s_out"})[0];
  body->outputs = {sum, sum};
  auto outs = b.node("Scan", {lens, init, x}, {"final", "partial"}, {attr_g("body", body), attr_i("num_scan_inputs", 1)});
  b.output(outs[0]);
  b.output(outs[1]);
  auto r = b.run();
  CHECK(values(r[0].tensor) == std::vector<double>{3, 103});
  CHECK(r[1].tensor.dims() == std::vector<int64_t>{2, 2, 1});
  CHECK(values(r[1].tensor) == std::vector<double>{1, 3, 103, 0});
}

TEST_CASE("Sequence ops: construct, insert, at, erase, length") {
  ModelBuilder b(11);
  ir::Value* a = b.input("a", tensor<int64_t>({1}, {1}));
  ir::Value* c = b.input("c", tensor<int64_t>({2}, {2, 3}));
  ir::Value* d = b.input("d", tensor<int64_t>({}, {4}));
  ir::Value* front = b.input("front", ir::Tensor::scalar<int32_t>(0));
  ir::Value* neg = b.input("neg", ir::Tensor::scalar<int64_t>(-1));
  ir::Value* s = b.node("SequenceConstruct", {a, c}, {"s"})[0];
  ir::Value* s2 = b.node("SequenceInsert", {s, d, front}, {"s2"})[0];        // [d, a, c]
  ir::Value* last = b.node("SequenceAt", {s2, neg}, {"last"})[0];             // c
  ir::Value* s3 = b.node("SequenceErase", {s2, front}, {"s3"})[0];            // [a, c]
  ir::Value* len = b.node("SequenceLength", {s3}, {"len"})[0];
  b.output(s2);
  b.output(last);
  b.output(len);
  auto r = b.run();
  REQUIRE(r[0].kind == RValue::Kind::Sequence);
  REQUIRE(r[0].seq.size() == 3);
  CHECK(values(r[0].seq[0]) == std::vector<double>{4});
  CHECK(values(r[1].tensor) == std::vector<double>{2, 3});
  CHECK(values(r[2].tensor) == std::vector<double>{2});
}

TEST_CASE("SequenceInsert extends a sequence in place only when no later node reads it") {
  ModelBuilder b(13);
  ir::Value* a = b.input("a", tensor<int64_t>({1}, {1}));
  ir::Value* s = b.node("SequenceConstruct", {a}, {"s"})[0];
  ir::Value* s2 = b.node("SequenceInsert", {s, a}, {"s2"})[0];   // s is read again below
  ir::Value* s3 = b.node("SequenceInsert", {s2, a}, {"s3"})[0];  // s2 is not: taken over
  ir::Value* t = b.node("SequenceConstruct", {a}, {"t"})[0];
  ir::Value* t2 = b.node("SequenceInsert", {t, a}, {"t2"})[0];   // t is a graph output
  b.output(b.node("SequenceLength", {s}, {"len_s"})[0]);
  b.output(b.node("SequenceLength", {s3}, {"len_s3"})[0]);
  b.output(t);
  b.output(t2);
  auto r = b.run();
  CHECK(values(r[0].tensor) == std::vector<double>{1});
  CHECK(values(r[1].tensor) == std::vector<double>{3});
  REQUIRE(r[2].kind == RValue::Kind::Sequence);
  CHECK(r[2].seq.size() == 1);
  REQUIRE(r[3].kind == RValue::Kind::Sequence);
  CHECK(r[3].seq.size() == 2);
}

TEST_CASE("SequenceAt out of range is a model error") {
  const RValue s = RValue::sequence({tensor<float>({1}, {1.f})});
  CHECK_THROWS_AS(OpTest("SequenceAt", 11).in(s).in(scalar<int64_t>(1)).run(), ModelError);
}

TEST_CASE("SplitToSequence and ConcatFromSequence round trip (f16 and int32)") {
  ModelBuilder b(11);
  ir::Value* x = b.input("x", tensor<f16>({2, 3}, {f16(1), f16(2), f16(3), f16(4), f16(5), f16(6)}));
  ir::Value* split = b.input("split", tensor<int64_t>({2}, {1, 2}));
  ir::Value* parts = b.node("SplitToSequence", {x, split}, {"parts"}, {attr_i("axis", 1)})[0];
  ir::Value* back = b.node("ConcatFromSequence", {parts}, {"back"}, {attr_i("axis", 1)})[0];
  ir::Value* y = b.input("y", tensor<int32_t>({3}, {7, 8, 9}));
  ir::Value* ones = b.node("SplitToSequence", {y}, {"ones"}, {attr_i("keepdims", 0)})[0];
  ir::Value* stacked = b.node("ConcatFromSequence", {ones}, {"stacked"}, {attr_i("axis", -1), attr_i("new_axis", 1)})[0];
  ir::Value* chunk = b.input("chunk", ir::Tensor::scalar<int64_t>(2));
  ir::Value* chunks = b.node("SplitToSequence", {y, chunk}, {"chunks"})[0];
  b.output(parts);
  b.output(back);
  b.output(ones);
  b.output(stacked);
  b.output(chunks);
  auto r = b.run();
  REQUIRE(r[0].seq.size() == 2);
  CHECK(r[0].seq[1].dims() == std::vector<int64_t>{2, 2});
  CHECK(values(r[0].seq[1]) == std::vector<double>{2, 3, 5, 6});
  CHECK(r[1].tensor.dtype() == ir::DType::F16);
  CHECK(values(r[1].tensor) == std::vector<double>{1, 2, 3, 4, 5, 6});
  REQUIRE(r[2].seq.size() == 3);
  CHECK(r[2].seq[0].rank() == 0);
  CHECK(r[3].tensor.dims() == std::vector<int64_t>{3});
  CHECK(values(r[3].tensor) == std::vector<double>{7, 8, 9});
  REQUIRE(r[4].seq.size() == 2);
  CHECK(values(r[4].seq[1]) == std::vector<double>{9});
}

TEST_CASE("SplitToSequence rejects split lengths that do not cover the axis") {
  ModelBuilder b(11);
  ir::Value* x = b.input("x", tensor<float>({4}, {1, 2, 3, 4}));
  ir::Value* split = b.input("split", tensor<int64_t>({2}, {1, 2}));
  b.output(b.node("SplitToSequence", {x, split}, {"parts"})[0]);
  CHECK_THROWS_AS(b.run(), ModelError);
}

TEST_CASE("SequenceMap runs the body per element, broadcasting tensor inputs") {
  ModelBuilder b(17);
  ir::Value* a = b.input("a", tensor<float>({1}, {1.f}));
  ir::Value* c = b.input("c", tensor<float>({2}, {2.f, 3.f}));
  ir::Value* k = b.input("k", tensor<float>({1}, {10.f}));
  ir::Value* s = b.node("SequenceConstruct", {a, c}, {"s"})[0];
  auto body = b.subgraph("body", {"e", "kk"});
  body->outputs = {b.node(*body, "Add", {body->inputs[0], body->inputs[1]}, {"r"})[0]};
  b.output(b.node("SequenceMap", {s, k}, {"mapped"}, {attr_g("body", body)})[0]);
  auto r = b.run();
  REQUIRE(r[0].seq.size() == 2);
  CHECK(values(r[0].seq[0]) == std::vector<double>{11});
  CHECK(values(r[0].seq[1]) == std::vector<double>{12, 13});
}

TEST_CASE("Optional, OptionalHasElement and OptionalGetElement") {
  ModelBuilder b(18);
  ir::Value* x = b.input("x", tensor<uint8_t>({2}, {3, 4}));
  ir::Value* none = b.input("none", RValue::none());
  ir::Value* opt = b.node("Optional", {x}, {"opt"})[0];
  ir::Value* empty = b.node("Optional", {}, {"empty"})[0];
  b.output(b.node("OptionalHasElement", {opt}, {"h1"})[0]);
  b.output(b.node("OptionalHasElement", {empty}, {"h2"})[0]);
  b.output(b.node("OptionalHasElement", {none}, {"h3"})[0]);
  b.output(b.node("OptionalHasElement", {}, {"h4"})[0]);
  b.output(b.node("OptionalGetElement", {opt}, {"g"})[0]);
  auto r = b.run();
  CHECK(values(r[0].tensor) == std::vector<double>{1});
  CHECK(values(r[1].tensor) == std::vector<double>{0});
  CHECK(values(r[2].tensor) == std::vector<double>{0});
  CHECK(values(r[3].tensor) == std::vector<double>{0});
  CHECK(values(r[4].tensor) == std::vector<double>{3, 4});
}

TEST_CASE("OptionalGetElement on an empty optional is a model error") {
  CHECK_THROWS_AS(OpTest("OptionalGetElement", 18).in(RValue::none()).run_values(), ModelError);
}

TEST_CASE("concat/stack/slice helpers handle strings") {
  ir::Node n;
  n.op_type = "ConcatFromSequence";
  ir::Tensor a = ir::Tensor::from_strings({1}, {"a"});
  ir::Tensor c = ir::Tensor::from_strings({2}, {"b", "c"});
  ir::Tensor cat = backends::cpu::concat_tensors(n, {a, c}, 0);
  CHECK(cat.strings() == std::vector<std::string>{"a", "b", "c"});
  ir::Tensor st = backends::cpu::stack_tensors(n, {c, c}, 1);
  CHECK(st.dims() == std::vector<int64_t>{2, 2});
  CHECK(st.strings() == std::vector<std::string>{"b", "b", "c", "c"});
  ir::Tensor sl = backends::cpu::slice_axis(n, st, 0, 1, 1, false);
  CHECK(sl.strings() == std::vector<std::string>{"c", "c"});
  CHECK_THROWS_AS(backends::cpu::concat_tensors(n, {a, st}, 0), ModelError);
}
