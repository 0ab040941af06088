// One-node model runner for the elementwise and cast kernel tests: builds a graph holding one
// node, feeds tensors as graph inputs and returns what the cpu backend computes.
#pragma once
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <algorithm>

#include "backends/executor.h"
#include "ir/graph.h"

namespace mcc::test_ew {

struct Node1 {
  std::string op;
  int opset;
  std::vector<ir::Tensor> inputs;  // undefined tensor = omitted optional input
  std::vector<ir::Attribute> attrs;
  int threads = 2;

  Node1(std::string o, int v) : op(std::move(o)), opset(v) {}
  Node1& in(ir::Tensor t) { inputs.push_back(std::move(t)); return *this; }
  Node1& none() { inputs.emplace_back(); return *this; }
  Node1& i(const std::string& n, int64_t v) { attrs.push_back({n, ir::AttrKind::Int, v, "", "", ""}); return *this; }
  Node1& f(const std::string& n, float v) { attrs.push_back({n, ir::AttrKind::Float, v, "", "", ""}); return *this; }
  Node1& s(const std::string& n, std::string v) { attrs.push_back({n, ir::AttrKind::String, std::move(v), "", "", ""}); return *this; }

  ir::Tensor run() const {
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
      v.is_graph_input = true;
      g.inputs.push_back(&v);
      ins.push_back(&v);
      feeds.emplace_back(v.name, backends::RValue::of(inputs[k]));
    }
    ir::Node& n = g.add_node(op, "", "node", ins, {"out"});
    n.since_version = opset;
    for (const auto& a : attrs) n.set_attr(a);
    g.outputs.push_back(n.outputs[0]);
    backends::ExecOptions opts;
    opts.threads = threads;
    backends::Executor ex(m, opts);
    return ex.run(feeds).at(0).tensor;
  }
};

template <class T>
ir::Tensor tensor(std::vector<int64_t> dims, const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
    ir::Tensor t = ir::Tensor::allocate(ir::DType::Bool, std::move(dims));
    auto d = t.mutable_data<bool>();
    for (size_t i = 0; i < v.size() && i < d.size(); ++i) d[i] = v[i];
    return t;
  } else {
    return ir::Tensor::from_vector<T>(std::move(dims), v);
  }
}
template <class T>
ir::Tensor vec(const std::vector<T>& v) { return tensor<T>({static_cast<int64_t>(v.size())}, v); }
/// A 1-D tensor of T from double values (f16/bf16 round to nearest).
template <class T>
ir::Tensor vec_of(const std::vector<double>& v) {
  std::vector<T> t;
  for (double x : v) t.push_back(static_cast<T>(static_cast<float>(x)));
  if constexpr (std::is_integral_v<T>) { t.clear(); for (double x : v) t.push_back(static_cast<T>(x)); }
  return vec<T>(t);
}

/// Values of a numeric or bool tensor as double.
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

/// True when a and b have the same size and agree within atol + rtol*|b| (NaN equals NaN).
inline bool close(const std::vector<double>& a, const std::vector<double>& b, double rtol = 1e-5, double atol = 1e-6) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return false;
      continue;
    }
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return false;
      continue;
    }
    if (std::abs(a[i] - b[i]) > atol + rtol * std::abs(b[i])) return false;
  }
  return true;
}

/// Tolerance by dtype (f32 tight; f16/bf16 loose).
inline double rtol_for(ir::DType dt) {
  return dt == ir::DType::F16 ? 1e-3 : dt == ir::DType::BF16 ? 1e-2 : 1e-5;
}

}  // namespace mcc::test_ew
