// Graph builder for the control-family kernel tests, where one node is not enough: graph inputs
// fed with runtime values (tensors, sequences, empty optionals), several nodes, subgraphs that
// capture outer values, and a run on the cpu backend with a fixed thread count. One-node tests
// use test::OpTest (support/op_test.h), whose attribute and tensor factories this builds on.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/op_test.h"

namespace mcc::test {

struct ModelBuilder {
  ir::Model model;
  int opset;
  std::vector<std::pair<std::string, RValue>> feeds;

  explicit ModelBuilder(int v) : opset(v) {
    model.ir_version = 8;
    model.opset_imports = {{"", v}};
    model.graph = std::make_unique<ir::Graph>();
  }
  ir::Graph& g() { return *model.graph; }

  /// A graph input fed with `v`.
  ir::Value* input(const std::string& name, RValue v) {
    ir::Value& val = g().add_value(name);
    val.is_graph_input = true;
    g().inputs.push_back(&val);
    feeds.emplace_back(name, std::move(v));
    return &val;
  }
  ir::Value* input(const std::string& name, ir::Tensor t) { return input(name, RValue::of(std::move(t))); }

  /// A node in graph `in` (the main graph by default); returns its outputs.
  std::vector<ir::Value*> node(ir::Graph& in, const std::string& op, const std::vector<ir::Value*>& ins,
                               const std::vector<std::string>& outs, const std::vector<ir::Attribute>& attrs = {}) {
    ir::Node& n = in.add_node(op, "", op + "_" + std::to_string(in.nodes().size()), ins, outs);
    n.since_version = opset;
    for (const auto& a : attrs) n.set_attr(a);
    return n.outputs;
  }
  std::vector<ir::Value*> node(const std::string& op, const std::vector<ir::Value*>& ins,
                               const std::vector<std::string>& outs, const std::vector<ir::Attribute>& attrs = {}) {
    return node(g(), op, ins, outs, attrs);
  }
  /// A subgraph of the main graph with `n_inputs` inputs named prefix_0...
  std::shared_ptr<ir::Graph> subgraph(const std::string& name, const std::vector<std::string>& input_names) {
    auto sg = std::make_shared<ir::Graph>(&g());
    sg->name = name;
    for (const auto& in : input_names) sg->inputs.push_back(&sg->add_value(in));
    return sg;
  }
  void output(ir::Value* v) { g().outputs.push_back(v); }

  std::vector<RValue> run() {
    backends::ExecOptions opts;
    opts.threads = 2;
    backends::Executor ex(model, opts);
    return ex.run(feeds);
  }
};

}  // namespace mcc::test
