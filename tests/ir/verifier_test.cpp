// The IR verifier: a valid model (with a subgraph capturing an outer value) passes, and each rule
// has a negative case that breaks exactly that invariant and checks the message names it.
#include <doctest/doctest.h>

#include <string>

#include "ir/graph.h"
#include "ir/verifier.h"
#include "support/ir_attr.h"

using namespace mcc::ir;
using mcc::test::attr;

namespace {

/// x -> Mul(x, w) -> m -> If(cond){ then: Neg(m) } -> y, with typed graph inputs/outputs.
struct Fixture {
  Model m;
  Graph* g = nullptr;
  Value *x = nullptr, *cond = nullptr, *w = nullptr, *mid = nullptr, *y = nullptr;
  Node *mul = nullptr, *iff = nullptr, *neg = nullptr;
  std::shared_ptr<Graph> then_g;

  Fixture() {
    m.ir_version = 8;
    m.opset_imports = {{"", 17}};
    m.graph = std::make_unique<Graph>();
    g = m.graph.get();
    g->name = "main";
    x = &g->add_value("x");
    x->dtype = DType::F32;
    x->shape = Shape::of({2});
    x->has_type = true;
    cond = &g->add_value("cond");
    cond->dtype = DType::Bool;
    cond->shape = Shape::of({});
    cond->has_type = true;
    g->inputs = {x, cond};
    w = &g->add_initializer("w", Tensor::from_vector<float>({2}, {1.0f, 2.0f}));
    mul = &g->add_node("Mul", "", "mul", {x, w}, {"m"});
    mul->since_version = 14;
    mid = mul->outputs[0];
    then_g = std::make_shared<Graph>(g);
    then_g->name = "then";
    neg = &then_g->add_node("Neg", "", "neg", {mid}, {"t"});
    neg->since_version = 13;
    then_g->outputs.push_back(neg->outputs[0]);
    iff = &g->add_node("If", "", "if0", {cond}, {"y"});
    iff->since_version = 16;
    iff->attrs.push_back(attr("then_branch", AttrKind::Graph, then_g));
    iff->attrs.push_back(attr("else_branch", AttrKind::Graph, then_g));
    y = iff->outputs[0];
    y->dtype = DType::F32;
    y->has_type = true;
    g->outputs.push_back(y);
  }
};

std::string verify_message(const Model& m) {
  try {
    verify(m);
  } catch (const mcc::ModelError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("verifier accepts a valid model with a subgraph capturing an outer value") {
  Fixture f;
  CHECK_NOTHROW(verify(f.m));
  CHECK_NOTHROW(verify_graph(*f.g));
}

TEST_CASE("verifier: use list missing an input") {
  Fixture f;
  f.x->uses.clear();
  CHECK(contains(verify_message(f.m), "use list of 'x' misses input 0"));
}

TEST_CASE("verifier: use list naming an input that is not the value") {
  Fixture f;
  f.x->uses.push_back(Use{f.mul, 1});  // input 1 of mul is w, not x
  CHECK(contains(verify_message(f.m), "which is not that value"));
}

TEST_CASE("verifier: use list naming a node outside the graph") {
  Fixture f;
  Graph other;
  Node& stray = other.add_node("Relu", "", "stray", {f.x}, {"s"});
  (void)stray;
  CHECK(contains(verify_message(f.m), "names a node outside this graph"));
}

TEST_CASE("verifier: output that does not record its producer") {
  Fixture f;
  f.mid->output_index = 3;
  CHECK(contains(verify_message(f.m), "does not record that node as its producer"));
}

TEST_CASE("verifier: value whose producer does not list it") {
  Fixture f;
  Value& ghost = f.g->add_value("ghost");
  ghost.producer = f.mul;
  ghost.output_index = 0;
  CHECK(contains(verify_message(f.m), "value 'ghost' claims output 0"));
}

TEST_CASE("verifier: duplicate value names in one graph") {
  Fixture f;
  Value& dup = f.g->add_value("dup");
  dup.name = "x";  // bypasses the name index on purpose
  CHECK(contains(verify_message(f.m), "value name 'x' is defined twice"));
}

TEST_CASE("verifier: nodes out of topological order") {
  Fixture f;
  // A node placed before mul that reads mul's output.
  Node& early = f.g->add_node("Relu", "", "early", {f.mid}, {"r"}, f.mul);
  early.since_version = 14;
  CHECK(contains(verify_message(f.m), "not in topological order"));
}

TEST_CASE("verifier: input that is never defined") {
  Fixture f;
  Value& floating = f.g->add_value("floating");  // no producer, not an input or initializer
  f.g->set_input(*f.mul, 1, &floating);
  CHECK(contains(verify_message(f.m), "input 1 'floating' is not defined"));
}

TEST_CASE("verifier: subgraph capture of a value defined after the owning node") {
  Fixture f;
  // Make the If's subgraph read the If's own output: not visible inside the node that defines it.
  f.then_g->set_input(*f.neg, 0, f.y);
  CHECK(contains(verify_message(f.m), "'y' is not defined"));
}

TEST_CASE("verifier: graph output that is never defined") {
  Fixture f;
  Value& nowhere = f.g->add_value("nowhere");
  nowhere.has_type = true;
  nowhere.dtype = DType::F32;
  f.g->outputs.push_back(&nowhere);
  CHECK(contains(verify_message(f.m), "graph output 'nowhere' is not defined"));
}

TEST_CASE("verifier: initializer dtype differs from its value") {
  Fixture f;
  f.w->dtype = DType::F16;
  CHECK(contains(verify_message(f.m), "initializer 'w' holds f32 data but its value says f16"));
}

TEST_CASE("verifier: initializer dims differ from its value's shape") {
  Fixture f;
  f.w->shape = Shape::of({3});
  CHECK(contains(verify_message(f.m), "initializer 'w' has dims that differ"));
}

TEST_CASE("verifier: initializer also produced by a node") {
  Fixture f;
  Node& n = f.g->add_node("Relu", "", "p", {f.x}, {});
  n.outputs.push_back(f.w);
  f.w->producer = &n;
  f.w->output_index = 0;
  CHECK(contains(verify_message(f.m), "initializer 'w' is also produced by"));
}

TEST_CASE("verifier: value holding a tensor but not listed as initializer") {
  Fixture f;
  f.g->initializers.clear();
  CHECK(contains(verify_message(f.m), "holds a tensor but is not listed as an initializer"));
}

TEST_CASE("verifier: graph input that a node also produces") {
  Fixture f;
  f.x->producer = f.mul;
  CHECK(contains(verify_message(f.m), "graph input 'x' is also produced"));
}

TEST_CASE("verifier: subgraph whose parent pointer is wrong") {
  Fixture f;
  f.then_g->set_parent(nullptr);
  CHECK(contains(verify_message(f.m), "whose parent is not this graph"));
}

TEST_CASE("verifier: attribute kind differs from the value it holds") {
  Fixture f;
  f.mul->attrs.push_back(attr("bad", AttrKind::Int, 1.5f));
  CHECK(contains(verify_message(f.m), "attribute 'bad' holds a value of another kind"));
}

TEST_CASE("verifier: attribute named twice on one node") {
  Fixture f;
  f.mul->attrs.push_back(attr("k", AttrKind::Int, int64_t{1}));
  f.mul->attrs.push_back(attr("k", AttrKind::Int, int64_t{2}));
  CHECK(contains(verify_message(f.m), "has attribute 'k' twice"));
}

TEST_CASE("verifier: top-level graph input without a type") {
  Fixture f;
  f.x->has_type = false;
  CHECK(contains(verify_message(f.m), "graph input 'x' declares no type"));
}

TEST_CASE("verifier: node domain not imported, or since_version above the opset") {
  Fixture f;
  f.mul->domain = "com.example";
  CHECK(contains(verify_message(f.m), "uses domain 'com.example', which the model does not import"));
  Fixture h;
  h.neg->since_version = 18;  // inside the subgraph
  CHECK(contains(verify_message(h.m), "since_version 18 above the imported opset 17"));
}

TEST_CASE("verifier: a model without a graph") {
  Model m;
  CHECK_THROWS_AS(verify(m), mcc::ModelError);
}
