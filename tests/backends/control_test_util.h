// Small graph builder for the control-family kernel tests: graph inputs fed with runtime values
// (tensors, sequences, empty optionals), nodes with typed attributes, subgraphs that capture
// outer values, and a run on the cpu backend with a fixed thread count.
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/executor.h"
#include "ir/graph.h"

namespace mcc::test_control {

using backends::RValue;

inline ir::Attribute attr_i(std::string n, int64_t v) { return {std::move(n), ir::AttrKind::Int, v, "", "", ""}; }
inline ir::Attribute attr_f(std::string n, float v) { return {std::move(n), ir::AttrKind::Float, v, "", "", ""}; }
inline ir::Attribute attr_s(std::string n, std::string v) { return {std::move(n), ir::AttrKind::String, std::move(v), "", "", ""}; }
inline ir::Attribute attr_is(std::string n, std::vector<int64_t> v) { return {std::move(n), ir::AttrKind::Ints, std::move(v), "", "", ""}; }
inline ir::Attribute attr_fs(std::string n, std::vector<float> v) { return {std::move(n), ir::AttrKind::Floats, std::move(v), "", "", ""}; }
inline ir::Attribute attr_ss(std::string n, std::vector<std::string> v) { return {std::move(n), ir::AttrKind::Strings, std::move(v), "", "", ""}; }
inline ir::Attribute attr_g(std::string n, std::shared_ptr<ir::Graph> g) { return {std::move(n), ir::AttrKind::Graph, std::move(g), "", "", ""}; }

template <class T>
ir::Tensor tensor(std::vector<int64_t> dims, const std::vector<T>& v) { return ir::Tensor::from_vector<T>(std::move(dims), v); }
inline ir::Tensor bools(std::vector<int64_t> dims, const std::vector<int>& v) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::Bool, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<bool>()[i] = v[i] != 0;
  return t;
}

/// Values of a tensor as double (any numeric dtype or bool).
inline std::vector<double> values(const ir::Tensor& t) {
  std::vector<double> out;
  ir::dispatch<MCC_ALL_DTYPES>(t.dtype(), "values", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T x : t.data<T>()) {
      if constexpr (std::is_arithmetic_v<T>) out.push_back(static_cast<double>(x));
      else out.push_back(static_cast<double>(static_cast<float>(x)));
    }
  });
  return out;
}

/// True when a and b have the same length and agree within atol + rtol·|b|.
inline bool close(const std::vector<double>& a, const std::vector<double>& b, double atol = 1e-5, double rtol = 1e-5) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i]))) return false;
  return true;
}

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

}  // namespace mcc::test_control
