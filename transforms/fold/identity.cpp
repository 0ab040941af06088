// eliminate_identity: remove nodes that pass their input through unchanged.
//
// Before:  y = Identity(x)   z = Relu(y)        After:  z = Relu(x)
// Removed: Identity; Dropout in inference (opset < 12 always; 12+ when training_mode is absent or
//   a constant false) whose mask output is unused; Cast to the dtype the input already has;
//   Reshape to the shape the input already has (static shapes); Transpose with the identity
//   permutation; Concat, Sum, Max, Min or Mean of a single input.
// Formula: y = x.
// Does not apply when: the input's dtype or static shape is unknown (Cast, Reshape); Dropout's
//   mask is used or its training_mode is not a constant false; the output is a graph output and
//   the input cannot take its name (a graph input, an initializer, a value with other uses or from
//   another graph): then the node stays so the interface keeps its names.
// Numerical notes: exact.
#include <string>

#include "ir/shape_inference/shape_inference.h"
#include "transforms/fold/fold.h"

namespace mcc::transforms::fold {
namespace {

bool passes_through(const ir::Node& n, const ir::ShapeInference& shapes) {
  if (n.num_inputs() < 1 || !n.inputs[0] || n.outputs.empty() || !n.outputs[0]) return false;
  const std::string& op = n.op_type;
  if (op == "Identity") return true;
  if (op == "Dropout") {
    for (size_t i = 1; i < n.outputs.size(); ++i)
      if (n.outputs[i] && (!n.outputs[i]->uses.empty() || is_any_graph_output(*n.outputs[i]))) return false;
    if (n.since_version < 12) return true;  // no training mode in these opsets (is_test ignored, as ORT)
    const ir::Value* tm = n.input(2);
    if (!tm) return true;
    if (!is_constant(tm) || tm->initializer->dtype() != ir::DType::Bool || tm->initializer->numel() != 1) return false;
    return !tm->initializer->data<bool>()[0];
  }
  if (op == "Cast") {
    const ir::DType have = shapes.of(n.inputs[0]).dtype;
    return have != ir::DType::Undefined && static_cast<int64_t>(have) == n.attr_int("to", -1);
  }
  if (op == "Reshape") {
    auto in = shapes.of(n.inputs[0]).dims, out = shapes.of(n.outputs[0]).dims;
    return in && out && *in == *out;
  }
  if (op == "Transpose") {
    const auto perm = n.attr_ints("perm");
    if (perm.empty()) {
      auto in = shapes.of(n.inputs[0]).dims;
      return in && in->size() <= 1;
    }
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return true;
  }
  if (op == "Concat" || op == "Sum" || op == "Max" || op == "Min" || op == "Mean") return n.num_inputs() == 1;
  return false;
}

bool try_remove(ir::Graph& g, ir::Node& n, RewriteLog& log, const ir::ShapeInference& shapes) {
  if (!passes_through(n, shapes)) return false;
  ir::Value* x = n.inputs[0];
  ir::Value* y = n.outputs[0];
  const std::string name = n.name.empty() ? y->name : n.name;
  const std::string op = n.op_type;
  if (!is_any_graph_output(*y)) {
    replace_value(*y, *x);
    detach_subgraph_captures(n);
    g.erase(n);
  } else {
    // y names an output: x takes y's name, which only works for a value made here and used only here.
    if (x->owner != &g || !x->producer || x->uses.size() != 1 || is_any_graph_output(*x)) return false;
    take_over_output(g, n, *y, *x);
  }
  log.add("identities_removed", name + " (" + op + ")");
  return true;
}

}  // namespace

int64_t eliminate_identity(ir::Model& m, const FoldConfig& cfg, RewriteLog& log) {
  const ir::ShapeInference shapes(m);
  return RewriteDriver()
      .on({"Identity", "Dropout", "Cast", "Reshape", "Transpose", "Concat", "Sum", "Max", "Min", "Mean"},
          [&](ir::Graph& g, ir::Node& n, RewriteLog& l) { return try_remove(g, n, l, shapes); })
      .recurse_subgraphs(cfg.subgraphs)
      .run(*m.graph, log);
}

}  // namespace mcc::transforms::fold
