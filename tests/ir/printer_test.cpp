// The deterministic text printer: exact output for a small model, subgraph nesting, attribute
// formatting (stored order, %.9g floats), symbolic/unknown dims and initializer checksums.
#include <doctest/doctest.h>

#include "ir/graph.h"
#include "ir/printer.h"
#include "support/ir_attr.h"

using namespace mcc::ir;
using mcc::test::attr;

namespace {

Value& typed_input(Graph& g, const std::string& name, DType dt, Shape s) {
  Value& v = g.add_value(name);
  v.dtype = dt;
  v.shape = std::move(s);
  v.has_type = true;
  g.inputs.push_back(&v);
  return v;
}
}  // namespace

TEST_CASE("printer: exact text for a small Conv+Relu model") {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}, {"ai.onnx.ml", 3}};
  m.producer_name = "pytorch";
  m.producer_version = "2.3";
  m.graph = std::make_unique<Graph>();
  Graph& g = *m.graph;
  g.name = "main";
  Shape xs;
  xs.dims = std::vector<Dim>{Dim::symbol("N"), Dim::of(3), Dim{}, Dim::of(4)};
  Value& x = typed_input(g, "X", DType::F32, xs);
  // 24 zero bytes: FNV-1a-32 = e2ba14a5 (computed independently).
  Value& w = g.add_initializer("W", Tensor::from_vector<float>({2, 3, 1, 1}, std::vector<float>(6, 0.0f)));
  Node& conv = g.add_node("Conv", "", "conv1", {&x, &w, nullptr}, {"c"});
  conv.since_version = 11;
  conv.attrs.push_back(attr("strides", AttrKind::Ints, std::vector<int64_t>{1, 1}));
  conv.attrs.push_back(attr("alpha", AttrKind::Float, 0.1f));
  conv.attrs.push_back(attr("auto_pad", AttrKind::String, std::string("NOTSET")));
  Value* c = conv.outputs[0];
  c->dtype = DType::F32;
  c->shape.dims = std::vector<Dim>{Dim::symbol("N"), Dim::of(2), Dim{}, Dim::of(4)};
  Node& relu = g.add_node("Relu", "", "", {c}, {"Y"});
  relu.since_version = 14;
  g.outputs.push_back(relu.outputs[0]);

  const std::string expected =
      "model ir_version=8 opsets=[\"\":17, \"ai.onnx.ml\":3] producer=\"pytorch 2.3\"\n"
      "graph main (X: f32[N,3,?,4]) -> (Y: ?) {\n"
      "  init W: f32[2,3,1,1] fnv1a=e2ba14a5\n"
      "  c = Conv@11(X, W, _) {strides=[1,1], alpha=0.100000001, auto_pad=\"NOTSET\"} : f32[N,2,?,4]  # \"conv1\"\n"
      "  Y = Relu@14(c) : ?\n"
      "}\n";
  const std::string got = print_model(m);
  CHECK(got == expected);
  CHECK(print_model(m) == got);  // deterministic
}

TEST_CASE("printer: FNV-1a checksum changes with the bytes and matches the reference value") {
  Graph g;
  g.add_initializer("a", Tensor::from_vector<uint8_t>({1}, {0x61}));  // "a"
  const std::string text = print_graph(g);
  // FNV-1a-32("a") = 0xe40c292c (reference value of the algorithm).
  CHECK(text.find("init a: u8[1] fnv1a=e40c292c") != std::string::npos);
  Graph h;
  h.add_initializer("a", Tensor::from_vector<uint8_t>({1}, {0x62}));
  CHECK(print_graph(h) != text);
}

TEST_CASE("printer: subgraphs are nested and indented under their node") {
  Graph g;
  g.name = "outer";
  Value& cond = typed_input(g, "cond", DType::Bool, Shape::of({}));
  Value& x = typed_input(g, "x", DType::F32, Shape::of({2}));
  auto then_g = std::make_shared<Graph>(&g);
  then_g->name = "then_body";
  Node& neg = then_g->add_node("Neg", "", "neg", {&x}, {"t"});  // outer-scope capture
  neg.since_version = 13;
  then_g->outputs.push_back(neg.outputs[0]);
  Node& iff = g.add_node("If", "", "if0", {&cond}, {"y"});
  iff.since_version = 16;
  iff.attrs.push_back(attr("then_branch", AttrKind::Graph, then_g));
  iff.outputs[0]->dtype = DType::F32;
  iff.outputs[0]->shape = Shape::of({2});
  g.outputs.push_back(iff.outputs[0]);

  const std::string expected =
      "graph outer (cond: bool[], x: f32[2]) -> (y: f32[2]) {\n"
      "  y = If@16(cond) {then_branch=<graph then_body>} : f32[2]  # \"if0\"\n"
      "    then_branch: graph then_body () -> (t: ?) {\n"
      "      t = Neg@13(x) : ?  # \"neg\"\n"
      "    }\n"
      "}\n";
  CHECK(print_graph(g) == expected);
}

TEST_CASE("printer: unknown rank, odd names, ints/floats lists and metadata") {
  Model m;
  m.ir_version = 10;
  m.opset_imports = {{"", 21}};
  m.metadata_props = {{"author", "me"}};
  m.graph = std::make_unique<Graph>();
  Graph& g = *m.graph;
  g.name = "g";
  Value& a = typed_input(g, "input with space", DType::F16, Shape::unknown());
  Node& n = g.add_node("Custom", "com.example", "n", {&a}, {"out"});
  n.attrs.push_back(attr("fs", AttrKind::Floats, std::vector<float>{0.5f, 1e-7f}));
  n.attrs.push_back(attr("empty", AttrKind::Ints, std::monostate{}));
  g.outputs.push_back(n.outputs[0]);
  const std::string text = print_model(m);
  CHECK(text.find("meta \"author\" = \"me\"\n") != std::string::npos);
  CHECK(text.find("(\"input with space\": f16)") != std::string::npos);
  CHECK(text.find("out = com.example.Custom(\"input with space\") {fs=[0.5,1.00000001e-07], empty=[]} : ?  # \"n\"") !=
        std::string::npos);
}
