// Graph mutation: use lists, erase, replace_all_uses, unique_name, topo_sort; subgraph walks.
#include <doctest/doctest.h>

#include "ir/graph.h"

using namespace mcc::ir;

TEST_CASE("graph keeps use lists right through set_input, replace_all_uses and erase") {
  Graph g;
  Value& x = g.add_value("x");
  g.inputs.push_back(&x);
  Node& a = g.add_node("Relu", "", "a", {&x}, {"y"});
  Node& b = g.add_node("Neg", "", "b", {a.outputs[0]}, {"z"});
  g.outputs.push_back(b.outputs[0]);
  CHECK(x.uses.size() == 1);
  CHECK(a.outputs[0]->uses.size() == 1);
  g.replace_all_uses(*a.outputs[0], x);
  CHECK(x.uses.size() == 2);
  CHECK(b.inputs[0] == &x);
  g.erase(a);
  CHECK(g.nodes().size() == 1);
  CHECK(x.uses.size() == 1);
  CHECK(g.find_value("y") == nullptr);
}

TEST_CASE("unique_name is deterministic and scope-aware") {
  Graph g;
  g.add_value("w");
  g.add_value("w_1");
  CHECK(g.unique_name("w") == "w_2");
  Graph sub(&g);
  CHECK(sub.unique_name("w") == "w_2");
  CHECK(sub.unique_name("fresh") == "fresh");
  CHECK_THROWS_AS(g.add_value("w"), mcc::ModelError);
}

TEST_CASE("topo_sort orders an unsorted graph and reports cycles") {
  Graph g;
  Value& x = g.add_value("x");
  g.inputs.push_back(&x);
  Value& mid = g.add_value("mid");
  Value& out = g.add_value("out");
  g.add_node_with_outputs("Neg", "", "second", {&mid}, {&out});
  g.add_node_with_outputs("Relu", "", "first", {&x}, {&mid});
  g.outputs.push_back(&out);
  g.topo_sort();
  REQUIRE(g.nodes().size() == 2);
  CHECK(g.nodes()[0]->name == "first");
  CHECK(g.nodes()[1]->name == "second");

  Graph c;
  Value& p = c.add_value("p");
  Value& q = c.add_value("q");
  c.add_node_with_outputs("Neg", "", "n1", {&q}, {&p});
  c.add_node_with_outputs("Neg", "", "n2", {&p}, {&q});
  CHECK_THROWS_AS(c.topo_sort(), mcc::ModelError);
}

TEST_CASE("typed attribute getters apply defaults and reject wrong kinds") {
  Graph g;
  Node& n = g.add_node("Conv", "", "c", {}, {"y"});
  n.set_attr(Attribute{"group", AttrKind::Int, int64_t{2}, "", "", ""});
  n.set_attr(Attribute{"pads", AttrKind::Ints, std::vector<int64_t>{1, 1, 1, 1}, "", "", ""});
  CHECK(n.attr_int("group", 1) == 2);
  CHECK(n.attr_int("missing", 7) == 7);
  CHECK(n.attr_ints("pads").size() == 4);
  CHECK_THROWS_AS(n.attr_string("group", ""), mcc::ModelError);
}

TEST_CASE("tensors share buffers, check dtypes and sizes") {
  Tensor t = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  CHECK(t.numel() == 4);
  CHECK(t.nbytes() == 16);
  Tensor r = t.reshaped({4});
  CHECK(r.buffer() == t.buffer());
  CHECK(r.data<float>()[3] == 4.0f);
  CHECK_THROWS_AS(t.data<int32_t>(), mcc::InternalError);
  CHECK_THROWS_AS(Tensor::from_buffer(DType::F32, {3}, make_owned_buffer(std::string(8, '\0'))), mcc::ModelError);
  CHECK(dtype_name(static_cast<DType>(99)) == "dtype<99>");
}

TEST_CASE("Node::subgraphs lists GRAPH and GRAPHS attributes in order; the counters recurse into them") {
  Graph g;
  Value& c = g.add_value("c");
  g.inputs.push_back(&c);
  Node& n = g.add_node("If", "", "if0", {&c}, {"y"});
  auto then_g = std::make_shared<Graph>(&g);
  then_g->add_node("Constant", "", "k", {}, {"t"});
  auto else_g = std::make_shared<Graph>(&g);
  auto extra0 = std::make_shared<Graph>(&g);
  extra0->add_node("Constant", "", "k0", {}, {"u"});
  extra0->add_initializer("w", Tensor::allocate(DType::F32, {4}));
  n.set_attr(Attribute{"then_branch", AttrKind::Graph, then_g, "", "", ""});
  n.set_attr(Attribute{"else_branch", AttrKind::Graph, else_g, "", "", ""});
  n.set_attr(Attribute{"more", AttrKind::Graphs, std::vector<std::shared_ptr<Graph>>{nullptr, extra0}, "", "", ""});
  n.set_attr(Attribute{"unused", AttrKind::Int, int64_t{1}, "", "", ""});

  const auto subs = n.subgraphs();
  REQUIRE(subs.size() == 3);  // the null entry of "more" is skipped
  CHECK(subs[0] == then_g.get());
  CHECK(subs[1] == else_g.get());
  CHECK(subs[2] == extra0.get());
  const auto slots = n.subgraph_slots();
  REQUIRE(slots.size() == 3);
  CHECK(slots[0].label() == "then_branch");
  CHECK(slots[2].label() == "more[1]");
  CHECK(count_nodes(g) == 3);
  CHECK(count_initializer_bytes(g) == 16);
  int graphs = 0;
  for_each_graph(g, [&](Graph&) { ++graphs; });
  CHECK(graphs == 4);
}
