// One-node model runner for the reduction-family kernel tests (reductions, softmax, arg/top-k,
// cumsum, resize): builds a graph with one node, feeds tensors as graph inputs and returns the
// outputs the cpu backend computes.
#pragma once
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "backends/executor.h"
#include "ir/graph.h"

namespace mcc::test_reduce {

struct OneNode {
  std::string op;
  int opset = 18;
  std::vector<ir::Tensor> inputs;  // undefined tensor = omitted optional input
  int num_outputs = 1;
  std::vector<ir::Attribute> attrs;

  OneNode(std::string o, int v) : op(std::move(o)), opset(v) {}
  OneNode& in(ir::Tensor t) { inputs.push_back(std::move(t)); return *this; }
  OneNode& none() { inputs.emplace_back(); return *this; }
  OneNode& outs(int k) { num_outputs = k; return *this; }
  OneNode& i(const std::string& n, int64_t v) { attrs.push_back({n, ir::AttrKind::Int, v, "", "", ""}); return *this; }
  OneNode& f(const std::string& n, float v) { attrs.push_back({n, ir::AttrKind::Float, v, "", "", ""}); return *this; }
  OneNode& s(const std::string& n, std::string v) { attrs.push_back({n, ir::AttrKind::String, std::move(v), "", "", ""}); return *this; }
  OneNode& is(const std::string& n, std::vector<int64_t> v) { attrs.push_back({n, ir::AttrKind::Ints, std::move(v), "", "", ""}); return *this; }
  OneNode& fs(const std::string& n, std::vector<float> v) { attrs.push_back({n, ir::AttrKind::Floats, std::move(v), "", "", ""}); return *this; }

  std::vector<ir::Tensor> run() const {
    ir::Model m;
    m.ir_version = 8;
    m.opset_imports = {{"", opset}};
    m.graph = std::make_unique<ir::Graph>();
    ir::Graph& g = *m.graph;
    std::vector<ir::Value*> ins;
    std::vector<std::pair<std::string, backends::RValue>> feeds;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!inputs[k].defined()) { ins.push_back(nullptr); continue; }
      ir::Value& v = g.add_value("in" + std::to_string(k));
      v.dtype = inputs[k].dtype();
      v.is_graph_input = true;
      g.inputs.push_back(&v);
      ins.push_back(&v);
      feeds.emplace_back(v.name, backends::RValue::of(inputs[k]));
    }
    std::vector<std::string> outs;
    for (int k = 0; k < num_outputs; ++k) outs.push_back("out" + std::to_string(k));
    ir::Node& n = g.add_node(op, "", "node", ins, outs);
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
  ir::Tensor run1() const { return run().at(0); }
};

template <class T>
ir::Tensor tensor(std::vector<int64_t> dims, const std::vector<T>& v) { return ir::Tensor::from_vector<T>(std::move(dims), v); }
/// A bool tensor (std::vector<bool> has no data(), so it is filled element by element).
inline ir::Tensor bools(std::vector<int64_t> dims, const std::vector<int>& v) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::Bool, std::move(dims));
  auto d = t.mutable_data<bool>();
  for (size_t k = 0; k < v.size() && k < d.size(); ++k) d[k] = v[k] != 0;
  return t;
}
inline ir::Tensor i64s(const std::vector<int64_t>& v) { return tensor<int64_t>({static_cast<int64_t>(v.size())}, v); }
inline ir::Tensor f32s(const std::vector<float>& v) { return tensor<float>({static_cast<int64_t>(v.size())}, v); }

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

/// Checks dims and values (|got - want| <= atol + rtol*|want|; NaN and inf compared exactly).
inline void check_tensor(const ir::Tensor& t, const std::vector<int64_t>& dims, const std::vector<double>& want,
                         double atol = 1e-6, double rtol = 1e-5) {
  CHECK(t.dims() == dims);
  const auto got = values(t);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("element " << k << ": got " << got[k] << ", want " << want[k]);
    if (std::isnan(want[k])) CHECK(std::isnan(got[k]));
    else if (std::isinf(want[k])) CHECK(got[k] == want[k]);
    else CHECK(std::fabs(got[k] - want[k]) <= atol + rtol * std::fabs(want[k]));
  }
}

}  // namespace mcc::test_reduce
