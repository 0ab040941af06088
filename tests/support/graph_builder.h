// Builds small IR models for tests: ONNX text syntax or node by node with seeded random weights;
// runs them on the cpu executor with seeded inputs, counts ops and compares outputs. Used by the
// stage tests (fold, fp16, quantize, prune) and anything else that needs a hand-made graph.
#pragma once
#include <onnx/defs/parser.h>
#include <onnx/onnx-ml.pb.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/executor.h"
#include "ir/errors.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"

namespace mcc::test {

/// Parses ONNX's textual syntax into the IR (through a serialized ModelProto, like a file).
inline ir::Model parse_onnx_text(const std::string& text) {
  onnx::ModelProto mp;
  auto st = onnx::OnnxParser::Parse(mp, text.c_str());
  if (!st.IsOK()) throw ModelError("onnx text: " + st.ErrorMessage());
  std::string bytes;
  mp.SerializeToString(&bytes);
  return ir::load_model_from_bytes(std::move(bytes), ".");
}

/// A model with an empty main graph importing the default domain at `opset`.
inline ir::Model empty_model(int opset, int64_t ir_version = 8) {
  ir::Model m;
  m.ir_version = ir_version;
  m.opset_imports.push_back({"", opset});
  m.graph = std::make_unique<ir::Graph>();
  m.graph->name = "g";
  return m;
}

inline ir::Value& add_input(ir::Graph& g, const std::string& name, std::vector<int64_t> dims,
                            ir::DType dt = ir::DType::F32) {
  ir::Value& v = g.add_value(name);
  v.is_graph_input = true;
  v.has_type = true;
  v.dtype = dt;
  v.shape = ir::Shape::of(dims);
  g.inputs.push_back(&v);
  return v;
}

inline ir::Tensor random_tensor(std::vector<int64_t> dims, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(ir::checked_numel(dims)));
  for (auto& x : v) x = u(rng);
  return ir::Tensor::from_vector<float>(std::move(dims), v);
}

/// Integers uniform in [lo, hi] as a tensor of T (u8, s8, s32 ...).
template <class T>
inline ir::Tensor random_int_tensor(std::vector<int64_t> dims, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<T> v(static_cast<size_t>(ir::checked_numel(dims)));
  for (auto& x : v) x = static_cast<T>(u(rng));
  return ir::Tensor::from_vector<T>(std::move(dims), v);
}

inline ir::Value& add_random_init(ir::Graph& g, const std::string& name, std::vector<int64_t> dims, uint32_t seed,
                                  float lo = -1.f, float hi = 1.f) {
  return g.add_initializer(name, random_tensor(std::move(dims), seed, lo, hi));
}

/// Appends a node (since_version = opset) with fresh output values.
inline ir::Node& add_node(ir::Graph& g, const std::string& op, const std::string& name, std::vector<ir::Value*> ins,
                          std::vector<std::string> outs, int opset, std::vector<ir::Attribute> attrs = {}) {
  ir::Node& n = g.add_node(op, "", name, ins, outs);
  n.since_version = opset;
  n.attrs = std::move(attrs);
  return n;
}

inline ir::Attribute attr_i(const std::string& name, int64_t v) { return {name, ir::AttrKind::Int, v, "", "", ""}; }
inline ir::Attribute attr_f(const std::string& name, float v) { return {name, ir::AttrKind::Float, v, "", "", ""}; }
inline ir::Attribute attr_ints(const std::string& name, std::vector<int64_t> v) {
  return {name, ir::AttrKind::Ints, std::move(v), "", "", ""};
}

inline ir::Tensor bool_scalar(bool b) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::Bool, {});
  t.mutable_data<bool>()[0] = b;
  return t;
}

/// Lists v as a graph output with a declared type (f32 unless it has one).
inline void mark_output(ir::Graph& g, ir::Value& v, ir::DType dt = ir::DType::F32) {
  v.has_type = true;
  if (v.dtype == ir::DType::Undefined) v.dtype = dt;
  g.outputs.push_back(&v);
}

/// Seeded inputs in [0, 1) for every graph input that has no initializer and a static shape.
inline std::vector<std::pair<std::string, backends::RValue>> random_feeds(const ir::Model& m, uint32_t seed) {
  std::vector<std::pair<std::string, backends::RValue>> feeds;
  uint32_t s = seed;
  for (const ir::Value* in : m.graph->inputs) {
    if (in->initializer) continue;
    auto dims = in->shape.static_dims();
    if (!dims) throw InternalError("random_feeds: input '" + in->name + "' has no static shape");
    if (in->dtype == ir::DType::F32) feeds.emplace_back(in->name, backends::RValue::of(random_tensor(*dims, s++, 0.f, 1.f)));
    else feeds.emplace_back(in->name, backends::RValue::of(ir::Tensor::allocate(in->dtype, *dims)));
  }
  return feeds;
}

inline std::vector<ir::Tensor> run_cpu(const ir::Model& m, const std::vector<std::pair<std::string, backends::RValue>>& feeds) {
  backends::Executor ex(m, backends::ExecOptions{1});
  std::vector<ir::Tensor> out;
  for (auto& v : ex.run(feeds)) out.push_back(v.tensor);
  return out;
}

/// Largest |a - b| over every output (inf when shapes or dtypes differ).
inline double max_abs_diff(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dims() != b[i].dims() || a[i].dtype() != b[i].dtype()) return INFINITY;
    if (a[i].dtype() == ir::DType::F32) {
      auto x = a[i].data<float>(), y = b[i].data<float>();
      for (size_t k = 0; k < x.size(); ++k) worst = std::max(worst, static_cast<double>(std::fabs(x[k] - y[k])));
    } else if (a[i].bytes().size() != b[i].bytes().size() ||
               std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes().size()) != 0) {
      return INFINITY;
    }
  }
  return worst;
}

/// Largest |a[i] - b[i]| of two u8, s8 or f32 tensors of one shape and dtype, and how many
/// elements differ (by more than tol); {inf, -1} when their dims or dtypes differ.
struct ElementDiff {
  double max = 0;
  int64_t count = 0;
};
inline ElementDiff element_diff(const ir::Tensor& a, const ir::Tensor& b, double tol = 0) {
  if (a.dims() != b.dims() || a.dtype() != b.dtype()) return {INFINITY, -1};
  ElementDiff r;
  auto all = [&](auto da, auto db) {
    for (size_t i = 0; i < da.size(); ++i) {
      const double d = std::fabs(static_cast<double>(da[i]) - static_cast<double>(db[i]));
      r.max = std::max(r.max, d);
      r.count += d > tol;
    }
  };
  if (a.dtype() == ir::DType::U8) all(a.data<uint8_t>(), b.data<uint8_t>());
  else if (a.dtype() == ir::DType::I8) all(a.data<int8_t>(), b.data<int8_t>());
  else if (a.dtype() == ir::DType::F32) all(a.data<float>(), b.data<float>());
  else return {INFINITY, -1};
  return r;
}

inline int64_t count_ops(const ir::Graph& g, const std::string& op) {
  int64_t n = 0;
  for (const ir::Node* node : g.nodes()) {
    if (node->op_type == op) ++n;
    for (const ir::Graph* sg : node->subgraphs()) n += count_ops(*sg, op);
  }
  return n;
}
inline int64_t count_ops(const ir::Model& m, const std::string& op) { return count_ops(*m.graph, op); }

}  // namespace mcc::test
