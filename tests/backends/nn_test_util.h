// One-node model runner for the nn kernel tests: builds a graph with one node, feeds the given
// tensors as graph inputs and returns the outputs computed by the cpu backend.
#pragma once
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/executor.h"
#include "ir/graph.h"

namespace mcc::test_nn {

struct NodeRun {
  std::string op;
  int opset = 17;
  std::vector<ir::Tensor> inputs;  // undefined tensor = omitted optional input
  int num_outputs = 1;
  std::vector<ir::Attribute> attrs;
  std::string domain;

  NodeRun(std::string o, int v) : op(std::move(o)), opset(v) {}
  NodeRun& in(ir::Tensor t) {
    inputs.push_back(std::move(t));
    return *this;
  }
  NodeRun& none() {
    inputs.emplace_back();
    return *this;
  }
  NodeRun& outs(int k) {
    num_outputs = k;
    return *this;
  }
  NodeRun& i(const std::string& n, int64_t v) {
    attrs.push_back({n, ir::AttrKind::Int, v, "", "", ""});
    return *this;
  }
  NodeRun& f(const std::string& n, float v) {
    attrs.push_back({n, ir::AttrKind::Float, v, "", "", ""});
    return *this;
  }
  NodeRun& s(const std::string& n, std::string v) {
    attrs.push_back({n, ir::AttrKind::String, std::move(v), "", "", ""});
    return *this;
  }
  NodeRun& is(const std::string& n, std::vector<int64_t> v) {
    attrs.push_back({n, ir::AttrKind::Ints, std::move(v), "", "", ""});
    return *this;
  }

  /// Runs the node and returns its outputs as tensors.
  std::vector<ir::Tensor> run() const {
    ir::Model m;
    m.ir_version = 8;
    m.opset_imports = {{domain, opset}};
    m.graph = std::make_unique<ir::Graph>();
    ir::Graph& g = *m.graph;
    std::vector<ir::Value*> ins;
    std::vector<std::pair<std::string, backends::RValue>> feeds;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!inputs[k].defined()) {
        ins.push_back(nullptr);
        continue;
      }
      ir::Value& v = g.add_value("in" + std::to_string(k));
      v.dtype = inputs[k].dtype();
      v.is_graph_input = true;
      g.inputs.push_back(&v);
      ins.push_back(&v);
      feeds.emplace_back(v.name, backends::RValue::of(inputs[k]));
    }
    std::vector<std::string> outs;
    for (int k = 0; k < num_outputs; ++k) outs.push_back("out" + std::to_string(k));
    ir::Node& n = g.add_node(op, domain, "node", ins, outs);
    n.since_version = opset;
    for (const auto& a : attrs) n.set_attr(a);
    for (ir::Value* o : n.outputs) g.outputs.push_back(o);
    backends::ExecOptions opts;
    opts.threads = 2;
    backends::Executor ex(m, opts);
    std::vector<ir::Tensor> res;
    for (auto& r : ex.run(feeds)) res.push_back(r.tensor);
    return res;
  }
};

template <class T>
ir::Tensor tensor(std::vector<int64_t> dims, const std::vector<T>& v) {
  return ir::Tensor::from_vector<T>(std::move(dims), v);
}

/// Values of a tensor as double (any numeric dtype).
inline std::vector<double> values(const ir::Tensor& t) {
  std::vector<double> out;
  ir::dispatch<MCC_NUMERIC_DTYPES>(t.dtype(), "values", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T x : t.data<T>()) {
      if constexpr (std::is_arithmetic_v<T>)
        out.push_back(static_cast<double>(x));
      else
        out.push_back(static_cast<double>(static_cast<float>(x)));
    }
  });
  return out;
}

/// Largest absolute difference between a tensor and expected values (inf on size mismatch).
inline double max_diff(const ir::Tensor& t, const std::vector<double>& want) {
  const auto got = values(t);
  if (got.size() != want.size()) return INFINITY;
  double d = 0;
  for (size_t k = 0; k < got.size(); ++k) d = std::max(d, std::abs(got[k] - want[k]));
  return d;
}

}  // namespace mcc::test_nn
