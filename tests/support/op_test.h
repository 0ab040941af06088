// One-node kernel tests (ORT OpTester style): OpTest builds a model holding a single node whose
// present inputs are graph inputs, runs it on the cpu backend with a fixed thread count and
// returns the outputs. Tensor factories, values() and dtype-aware comparisons come with it.
// Cross-backend (ggml's test-backend-ops idea): every run is repeated on each other available
// backend (the cuda backend, emulated on the host in the test build) and its outputs are checked
// against the cpu's at dtype-aware tolerances (backend_tol) whenever that backend took the node.
//
//   auto y = test::OpTest("Resize", 13).s("mode", "linear").in(x).none().in(test::vec<float>({1, 1, 2, 2})).run1();
//   test::check_tensor(y, {1, 1, 4, 4}, {...});
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/backend_registry.h"
#include "backends/executor.h"
#include "ir/graph.h"

namespace mcc::test {

using backends::RValue;

// ------------------------------------------------------------------------------------ attributes

inline ir::Attribute attr_i(std::string n, int64_t v) { return {std::move(n), ir::AttrKind::Int, v, "", "", ""}; }
inline ir::Attribute attr_f(std::string n, float v) { return {std::move(n), ir::AttrKind::Float, v, "", "", ""}; }
inline ir::Attribute attr_s(std::string n, std::string v) { return {std::move(n), ir::AttrKind::String, std::move(v), "", "", ""}; }
inline ir::Attribute attr_t(std::string n, ir::Tensor v) { return {std::move(n), ir::AttrKind::Tensor, std::move(v), "", "", ""}; }
inline ir::Attribute attr_g(std::string n, std::shared_ptr<ir::Graph> g) { return {std::move(n), ir::AttrKind::Graph, std::move(g), "", "", ""}; }
inline ir::Attribute attr_is(std::string n, std::vector<int64_t> v) { return {std::move(n), ir::AttrKind::Ints, std::move(v), "", "", ""}; }
inline ir::Attribute attr_fs(std::string n, std::vector<float> v) { return {std::move(n), ir::AttrKind::Floats, std::move(v), "", "", ""}; }
inline ir::Attribute attr_ss(std::string n, std::vector<std::string> v) { return {std::move(n), ir::AttrKind::Strings, std::move(v), "", "", ""}; }
inline ir::Attribute attr_ts(std::string n, std::vector<ir::Tensor> v) { return {std::move(n), ir::AttrKind::Tensors, std::move(v), "", "", ""}; }
inline ir::Attribute attr_gs(std::string n, std::vector<std::shared_ptr<ir::Graph>> v) { return {std::move(n), ir::AttrKind::Graphs, std::move(v), "", "", ""}; }

// ------------------------------------------------------------------------------------ runner

/// One node, run on the cpu backend. Inputs are tensors or runtime values (sequences, optionals);
/// an undefined tensor or none() is an omitted optional input. Graph attributes may capture
/// nothing from outside: their parent becomes the one-node graph.
class OpTest {
 public:
  /// `opset` is the version of `domain`; a non-default domain also imports ai.onnx `onnx_opset`.
  OpTest(std::string op, int opset, std::string domain = "", int onnx_opset = 17)
      : op_(std::move(op)), domain_(std::move(domain)), opset_(opset), onnx_opset_(onnx_opset) {}

  OpTest& in(ir::Tensor t) { return in(RValue::of(std::move(t))); }
  OpTest& in(RValue v) {
    inputs_.push_back(std::move(v));
    return *this;
  }
  OpTest& none() { return in(ir::Tensor()); }
  OpTest& outs(int k) {
    num_outputs_ = k;
    return *this;
  }
  OpTest& threads(int n) {
    threads_ = n;
    return *this;
  }

  OpTest& attr(ir::Attribute a) {
    attrs_.push_back(std::move(a));
    return *this;
  }
  OpTest& attrs(const std::vector<ir::Attribute>& as) {
    for (const auto& a : as) attrs_.push_back(a);
    return *this;
  }
  OpTest& i(std::string n, int64_t v) { return attr(attr_i(std::move(n), v)); }
  OpTest& f(std::string n, float v) { return attr(attr_f(std::move(n), v)); }
  OpTest& s(std::string n, std::string v) { return attr(attr_s(std::move(n), std::move(v))); }
  OpTest& t(std::string n, ir::Tensor v) { return attr(attr_t(std::move(n), std::move(v))); }
  OpTest& g(std::string n, std::shared_ptr<ir::Graph> v) { return attr(attr_g(std::move(n), std::move(v))); }
  OpTest& is(std::string n, std::vector<int64_t> v) { return attr(attr_is(std::move(n), std::move(v))); }
  OpTest& fs(std::string n, std::vector<float> v) { return attr(attr_fs(std::move(n), std::move(v))); }
  OpTest& ss(std::string n, std::vector<std::string> v) { return attr(attr_ss(std::move(n), std::move(v))); }
  OpTest& ts(std::string n, std::vector<ir::Tensor> v) { return attr(attr_ts(std::move(n), std::move(v))); }
  OpTest& gs(std::string n, std::vector<std::shared_ptr<ir::Graph>> v) { return attr(attr_gs(std::move(n), std::move(v))); }

  /// Skip the cross-backend repetition (nodes whose outputs are not a function of the inputs).
  OpTest& cpu_only() {
    cross_backend_ = false;
    return *this;
  }

  /// What one run on a backend gave: the outputs, the backend the node was placed on, the
  /// executor's transfer counts.
  struct BackendRun {
    std::vector<RValue> outputs;
    std::string placed_on;
    backends::Executor::Stats stats;
  };
  /// Runs the node with `b` requested (nodes b does not support run on the cpu).
  BackendRun run_on(const backends::Backend& b) const;

  /// Runs the node on the cpu and returns every output as a runtime value; repeats the run on
  /// every other available backend and checks its outputs against the cpu's.
  std::vector<RValue> run_values() const;
  /// Runs the node and returns its outputs as tensors (undefined for non-tensor outputs).
  std::vector<ir::Tensor> run() const {
    std::vector<ir::Tensor> res;
    for (auto& r : run_values()) res.push_back(std::move(r.tensor));
    return res;
  }
  /// The first output.
  ir::Tensor run1() const { return run().at(0); }

 private:
  static void adopt_subgraphs(const ir::Attribute& a, ir::Graph& parent) {
    if (const auto* sg = std::get_if<std::shared_ptr<ir::Graph>>(&a.value)) {
      if (*sg && !(*sg)->parent()) (*sg)->set_parent(&parent);
    } else if (const auto* sgs = std::get_if<std::vector<std::shared_ptr<ir::Graph>>>(&a.value)) {
      for (const auto& s : *sgs)
        if (s && !s->parent()) s->set_parent(&parent);
    }
  }

  std::string op_, domain_;
  int opset_, onnx_opset_;
  std::vector<RValue> inputs_;
  int num_outputs_ = 1;
  int threads_ = 2;
  bool cross_backend_ = true;
  std::vector<ir::Attribute> attrs_;
};

// ------------------------------------------------------------------------------------ tensors

/// A tensor from values of its own type (bool included: std::vector<bool> has no data()).
template <class T>
ir::Tensor tensor(std::vector<int64_t> dims, const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, bool>) {
    ir::Tensor t = ir::Tensor::allocate(ir::DType::Bool, std::move(dims));
    auto d = t.mutable_data<bool>();
    if (d.size() != v.size()) throw std::invalid_argument("tensor<bool>: size mismatch");
    for (size_t k = 0; k < v.size(); ++k) d[k] = v[k];
    return t;
  } else {
    return ir::Tensor::from_vector<T>(std::move(dims), v);
  }
}
/// A tensor of any numeric T from doubles (f16/bf16 round to nearest through float).
template <class T>
ir::Tensor tensor_of(std::vector<int64_t> dims, const std::vector<double>& v) {
  std::vector<T> c;
  c.reserve(v.size());
  for (double x : v) {
    if constexpr (std::is_arithmetic_v<T>) c.push_back(static_cast<T>(x));
    else c.push_back(static_cast<T>(static_cast<float>(x)));
  }
  return tensor<T>(std::move(dims), c);
}
/// f16 and bf16 tensors straight from doubles: tensor<f16>({2}, {1.5, -7}).
template <class T>
  requires(!std::is_arithmetic_v<T>)
ir::Tensor tensor(std::vector<int64_t> dims, const std::vector<double>& v) {
  return tensor_of<T>(std::move(dims), v);
}
/// A bool tensor from 0/1 ints.
inline ir::Tensor bools(std::vector<int64_t> dims, const std::vector<int>& v) {
  std::vector<bool> b(v.begin(), v.end());
  return tensor<bool>(std::move(dims), b);
}
template <class T>
ir::Tensor scalar(T v) {
  return tensor<T>({}, std::vector<T>{v});
}
/// A 1-D tensor.
template <class T>
ir::Tensor vec(const std::vector<T>& v) {
  return tensor<T>({static_cast<int64_t>(v.size())}, v);
}
/// A 1-D tensor of any numeric T from doubles.
template <class T>
ir::Tensor vec_of(const std::vector<double>& v) {
  return tensor_of<T>({static_cast<int64_t>(v.size())}, v);
}

/// n values start, start + step, ...
inline std::vector<float> iota(int64_t n, float start = 0.f, float step = 1.f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = start + step * static_cast<float>(k);
  return v;
}
/// n values uniform in [-1, 1), the same for the same seed.
inline std::vector<float> random_values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// ------------------------------------------------------------------------------------ comparison

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

struct Tol {
  double rtol = 1e-5, atol = 1e-6;
};
/// Default tolerance of a dtype: f32/f64 1e-5 relative + 1e-6 absolute, f16 1e-3, bf16 1e-2,
/// integers and bool exact.
inline Tol tol_for(ir::DType dt) {
  switch (dt) {
    case ir::DType::F32:
    case ir::DType::F64: return {1e-5, 1e-6};
    case ir::DType::F16: return {1e-3, 1e-3};
    case ir::DType::BF16: return {1e-2, 1e-2};
    default: return {0, 0};
  }
}

/// True when a and b have the same size and agree within atol + rtol*|b|. NaN equals NaN;
/// infinities must match exactly.
inline bool close(const std::vector<double>& a, const std::vector<double>& b, double rtol = 1e-5, double atol = 1e-6) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (std::isnan(a[k]) || std::isnan(b[k])) {
      if (std::isnan(a[k]) != std::isnan(b[k])) return false;
      continue;
    }
    if (std::isinf(a[k]) || std::isinf(b[k])) {
      if (a[k] != b[k]) return false;
      continue;
    }
    if (std::abs(a[k] - b[k]) > atol + rtol * std::abs(b[k])) return false;
  }
  return true;
}
/// A tensor against expected values, with the tolerance of its dtype unless one is given.
inline bool close(const ir::Tensor& t, const std::vector<double>& want, std::optional<Tol> tol = std::nullopt) {
  const Tol tl = tol.value_or(tol_for(t.dtype()));
  return close(values(t), want, tl.rtol, tl.atol);
}

/// Largest absolute difference between a tensor and expected values (inf on size mismatch).
inline double max_diff(const ir::Tensor& t, const std::vector<double>& want) {
  const auto got = values(t);
  if (got.size() != want.size()) return INFINITY;
  double d = 0;
  for (size_t k = 0; k < got.size(); ++k) d = std::max(d, std::abs(got[k] - want[k]));
  return d;
}

/// Checks dims, then each element (|got - want| <= atol + rtol*|want|; NaN equals NaN, infinities
/// exact), with the tolerance of the tensor's dtype unless one is given. One assertion per element,
/// so a failure names the element.
inline void check_tensor(const ir::Tensor& t, const std::vector<int64_t>& dims, const std::vector<double>& want,
                         std::optional<Tol> tol = std::nullopt) {
  const Tol tl = tol.value_or(tol_for(t.dtype()));
  CHECK(t.dims() == dims);
  const auto got = values(t);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("element " << k << ": got " << got[k] << ", want " << want[k]);
    if (std::isnan(want[k])) CHECK(std::isnan(got[k]));
    else if (std::isinf(want[k])) CHECK(got[k] == want[k]);
    else CHECK(std::fabs(got[k] - want[k]) <= tl.atol + tl.rtol * std::fabs(want[k]));
  }
}

// ------------------------------------------------------------------------------------ cross-backend

/// Tolerance of a backend's output against the cpu's: f32 1e-4 relative + 1e-4 absolute (other
/// summation orders, fused multiply-adds), f16 1e-2, bf16 2e-2, integers and bool exact.
inline Tol backend_tol(ir::DType dt) {
  switch (dt) {
    case ir::DType::F32:
    case ir::DType::F64: return {1e-4, 1e-4};
    case ir::DType::F16: return {1e-2, 1e-2};
    case ir::DType::BF16: return {2e-2, 2e-2};
    default: return {0, 0};
  }
}

/// Checks a backend's outputs against the cpu's: same kinds, dtypes and dims, values within
/// backend_tol.
inline void check_same_outputs(const std::vector<RValue>& want, const std::vector<RValue>& got, const std::string& backend,
                               const std::string& op) {
  INFO("op " << op << " on backend " << backend << " against cpu");
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("output " << k);
    REQUIRE(got[k].kind == want[k].kind);
    if (want[k].kind != RValue::Kind::Tensor) continue;
    const ir::Tensor& w = want[k].tensor;
    const ir::Tensor& g = got[k].tensor;
    CHECK(g.device().is_host());
    REQUIRE(g.dtype() == w.dtype());
    REQUIRE(g.dims() == w.dims());
    if (w.dtype() == ir::DType::String) {
      CHECK(g.strings() == w.strings());
      continue;
    }
    const Tol tl = backend_tol(w.dtype());
    const auto gv = values(g), wv = values(w);
    bool ok = close(gv, wv, tl.rtol, tl.atol);
    if (!ok) {
      size_t bad = 0;
      while (bad < wv.size() && close({gv[bad]}, {wv[bad]}, tl.rtol, tl.atol)) ++bad;
      INFO("first difference at element " << bad << ": " << (bad < gv.size() ? gv[bad] : 0.0) << " vs cpu "
                                          << (bad < wv.size() ? wv[bad] : 0.0));
      CHECK(ok);
    }
  }
}

inline OpTest::BackendRun OpTest::run_on(const backends::Backend& b) const {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{domain_, opset_}};
  if (!domain_.empty()) m.opset_imports.push_back({"", onnx_opset_});
  m.graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *m.graph;
  std::vector<ir::Value*> ins;
  std::vector<std::pair<std::string, RValue>> feeds;
  for (size_t k = 0; k < inputs_.size(); ++k) {
    if (!inputs_[k].defined()) {
      ins.push_back(nullptr);
      continue;
    }
    ir::Value& v = g.add_value("in" + std::to_string(k));
    if (inputs_[k].kind == RValue::Kind::Tensor) {
      v.dtype = inputs_[k].tensor.dtype();
      v.shape = ir::Shape::of(inputs_[k].tensor.dims());
    }
    v.is_graph_input = true;
    g.inputs.push_back(&v);
    ins.push_back(&v);
    feeds.emplace_back(v.name, inputs_[k]);
  }
  std::vector<std::string> outs;
  for (int k = 0; k < num_outputs_; ++k) outs.push_back("out" + std::to_string(k));
  ir::Node& n = g.add_node(op_, domain_, "node", ins, outs);
  n.since_version = opset_;
  for (const auto& a : attrs_) {
    adopt_subgraphs(a, g);
    n.set_attr(a);
  }
  for (ir::Value* o : n.outputs) g.outputs.push_back(o);
  backends::ExecOptions opts;
  opts.threads = threads_;
  opts.backend = &b;
  backends::Executor ex(m, opts);
  BackendRun r;
  r.outputs = ex.run(feeds);
  r.placed_on = std::string(ex.placement_of(n)->name());
  r.stats = ex.stats();
  return r;
}

inline std::vector<RValue> OpTest::run_values() const {
  BackendRun ref = run_on(backends::cpu_backend());
  if (!cross_backend_) return std::move(ref.outputs);
  for (const backends::Backend* b : backends::available_backends()) {
    if (b == &backends::cpu_backend()) continue;
    BackendRun other = run_on(*b);
    if (other.placed_on == "cpu") continue;  // fell back: the cpu kernel ran again
    check_same_outputs(ref.outputs, other.outputs, std::string(b->name()), op_);
  }
  return std::move(ref.outputs);
}

}  // namespace mcc::test
