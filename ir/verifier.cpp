// Structural and type invariants of the IR, checked after import and after every stage. Each rule
// throws ModelError naming the graph, the node and the value involved; the first broken rule wins.
//
// Rules (per graph, recursively into subgraphs):
//   names      value names are unique within one graph (shadowing an outer scope is allowed)
//   ownership  nodes and their outputs belong to the graph; subgraphs point to their parent graph
//   producers  node.outputs[i]->producer == node and output_index == i, and conversely
//   uses       every present input has a matching Use, and every Use points back at the value
//   order      node order is topological; every input is a graph input, an initializer, an
//              earlier node's output, or a value visible from an enclosing scope at that point
//   outputs    graph outputs are defined (in this graph or an enclosing scope)
//   inits      initializers hold a tensor whose dtype and dims match the value; no producer
//   attrs      an attribute's kind matches the value it holds
// Model-level: top-level graph inputs/outputs declare a type; every node's domain is imported and
// its since_version does not exceed the imported opset.
#include "ir/verifier.h"

#include <algorithm>
#include <set>
#include <string>
#include <unordered_set>

namespace mcc::ir {
namespace {

using DefinedSet = std::unordered_set<const Value*>;

std::string graph_label(const Graph& g) { return "graph '" + g.name + "'"; }

[[noreturn]] void fail(const Graph& g, const std::string& what) {
  throw ModelError("invalid IR: " + graph_label(g) + ": " + what);
}

bool kind_matches(const Attribute& a) {
  const AttrValue& v = a.value;
  if (!a.ref_attr_name.empty() && std::holds_alternative<std::monostate>(v)) return true;
  switch (a.kind) {
    case AttrKind::Float: return std::holds_alternative<float>(v);
    case AttrKind::Int: return std::holds_alternative<int64_t>(v);
    case AttrKind::String: return std::holds_alternative<std::string>(v);
    case AttrKind::Tensor: return std::holds_alternative<Tensor>(v);
    case AttrKind::Graph: return std::holds_alternative<std::shared_ptr<Graph>>(v);
    // An empty list may be stored as monostate.
    case AttrKind::Floats: return std::holds_alternative<std::vector<float>>(v) || std::holds_alternative<std::monostate>(v);
    case AttrKind::Ints: return std::holds_alternative<std::vector<int64_t>>(v) || std::holds_alternative<std::monostate>(v);
    case AttrKind::Strings:
      return std::holds_alternative<std::vector<std::string>>(v) || std::holds_alternative<std::monostate>(v);
    case AttrKind::Tensors: return std::holds_alternative<std::vector<Tensor>>(v) || std::holds_alternative<std::monostate>(v);
    case AttrKind::Graphs:
      return std::holds_alternative<std::vector<std::shared_ptr<Graph>>>(v) || std::holds_alternative<std::monostate>(v);
    case AttrKind::SparseTensor:
    case AttrKind::TypeProto: return std::holds_alternative<OpaqueProto>(v);
    case AttrKind::SparseTensors:
    case AttrKind::TypeProtos:
      return std::holds_alternative<std::vector<OpaqueProto>>(v) || std::holds_alternative<std::monostate>(v);
    case AttrKind::Undefined: return true;  // unknown kinds are carried through as they came
  }
  return true;  // kinds from a newer ONNX: carried through
}

/// True when `user` is a node of `g` or of one of its (nested) subgraphs.
bool node_within(const Node* user, const Graph& g) {
  for (const Graph* o = user ? user->owner : nullptr; o; o = o->parent())
    if (o == &g) return true;
  return false;
}

class Verifier {
 public:
  // `scopes`: the values visible from enclosing graphs at the point where this graph is used.
  void graph(const Graph& g, std::vector<const DefinedSet*>& scopes) {
    check_names(g);
    DefinedSet defined;
    for (const Value* v : g.inputs) {
      if (!v) fail(g, "a graph input is null");
      if (v->owner != &g) fail(g, "graph input '" + v->name + "' belongs to another graph");
      if (v->producer) fail(g, "graph input '" + v->name + "' is also produced by " + v->producer->describe());
      defined.insert(v);
    }
    check_initializers(g, defined);

    // Position of each node, to tell "defined later" (order) from "never defined".
    std::set<const Node*> seen;
    for (const Node* n : g.nodes()) {
      if (!n) fail(g, "a node slot is null");
      if (n->owner != &g) fail(g, n->describe() + " belongs to another graph");
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const Value* v = n->inputs[i];
        if (!v) continue;
        check_use(g, *n, static_cast<int>(i), *v);
        if (defined.count(v) || visible_outside(v, scopes)) continue;
        if (v->owner == &g && v->producer && v->producer->owner == &g && !seen.count(v->producer))
          fail(g, n->describe() + " uses '" + v->name + "' before its producer " + v->producer->describe() +
                      " (nodes are not in topological order)");
        fail(g, n->describe() + " input " + std::to_string(i) + " '" + v->name +
                    "' is not defined (not a graph input, initializer, earlier output or outer-scope value)");
      }
      check_attrs(g, *n);
      // Subgraphs see this graph's values defined so far (not this node's own outputs).
      scopes.push_back(&defined);
      for (const Graph* sg : n->subgraphs()) {
        if (sg->parent() != &g)
          fail(g, n->describe() + " holds subgraph '" + sg->name + "' whose parent is not this graph");
        graph(*sg, scopes);
      }
      scopes.pop_back();
      for (size_t i = 0; i < n->outputs.size(); ++i) {
        const Value* o = n->outputs[i];
        if (!o) continue;
        if (o->owner != &g) fail(g, n->describe() + " output '" + o->name + "' belongs to another graph");
        if (o->producer != n || o->output_index != static_cast<int>(i))
          fail(g, "output " + std::to_string(i) + " '" + o->name + "' of " + n->describe() +
                      " does not record that node as its producer");
        if (o->is_constant()) fail(g, "initializer '" + o->name + "' is also produced by " + n->describe());
        defined.insert(o);
      }
      seen.insert(n);
    }

    for (const Value* v : g.values()) check_value(g, *v, seen);
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      const Value* v = g.outputs[i];
      if (!v) fail(g, "graph output " + std::to_string(i) + " is null");
      if (!defined.count(v) && !visible_outside(v, scopes))
        fail(g, "graph output '" + v->name + "' is not defined by any node, input or initializer");
    }
  }

 private:
  static bool visible_outside(const Value* v, const std::vector<const DefinedSet*>& scopes) {
    for (const DefinedSet* s : scopes)
      if (s->count(v)) return true;
    return false;
  }

  static void check_names(const Graph& g) {
    std::set<std::string_view> names;
    for (const Value* v : g.values()) {
      if (v->name.empty()) continue;
      if (!names.insert(v->name).second) fail(g, "value name '" + v->name + "' is defined twice");
      if (g.find_value(v->name) != v) fail(g, "value '" + v->name + "' is missing from the graph's name index (renamed directly?)");
    }
  }

  static void check_initializers(const Graph& g, DefinedSet& defined) {
    for (const Value* v : g.initializers) {
      if (!v) fail(g, "an initializer slot is null");
      if (v->owner != &g) fail(g, "initializer '" + v->name + "' belongs to another graph");
      if (!v->initializer) fail(g, "initializer '" + v->name + "' holds no tensor");
      if (v->producer) fail(g, "initializer '" + v->name + "' is also produced by " + v->producer->describe());
      const Tensor& t = *v->initializer;
      if (t.dtype() != v->dtype)
        fail(g, "initializer '" + v->name + "' holds " + dtype_name(t.dtype()) + " data but its value says " +
                    dtype_name(v->dtype));
      if (v->shape.rank_known() && !(v->shape == Shape::of(t.dims()))) {
        // A declared shape may name dims symbolically only if it agrees on the static ones.
        bool ok = v->shape.rank() == t.rank();
        for (size_t i = 0; ok && i < t.rank(); ++i) {
          const Dim& d = (*v->shape.dims)[i];
          if (d.value && *d.value != t.dims()[i]) ok = false;
        }
        if (!ok) fail(g, "initializer '" + v->name + "' has dims that differ from its value's shape");
      }
      const int bits = info(t.dtype()).bits;
      if (bits > 0 && t.buffer() && t.bytes().size() != t.nbytes())
        fail(g, "initializer '" + v->name + "' holds " + std::to_string(t.bytes().size()) + " bytes, expected " +
                    std::to_string(t.nbytes()));
      defined.insert(v);
    }
    for (const Value* v : g.values())
      if (v->is_constant() && std::find(g.initializers.begin(), g.initializers.end(), v) == g.initializers.end())
        fail(g, "value '" + v->name + "' holds a tensor but is not listed as an initializer");
  }

  static void check_use(const Graph& g, const Node& n, int i, const Value& v) {
    if (std::find(v.uses.begin(), v.uses.end(), Use{const_cast<Node*>(&n), i}) == v.uses.end())
      fail(g, "use list of '" + v.name + "' misses input " + std::to_string(i) + " of " + n.describe());
  }

  static void check_value(const Graph& g, const Value& v, const std::set<const Node*>& nodes) {
    if (v.owner != &g) fail(g, "value '" + v.name + "' does not record this graph as its owner");
    if (v.producer) {
      if (!nodes.count(v.producer)) fail(g, "value '" + v.name + "' names a producer that is not in this graph");
      const auto idx = static_cast<size_t>(v.output_index);
      if (v.output_index < 0 || idx >= v.producer->outputs.size() || v.producer->outputs[idx] != &v)
        fail(g, "value '" + v.name + "' claims output " + std::to_string(v.output_index) + " of " +
                    v.producer->describe() + ", which does not list it");
    }
    for (const Use& u : v.uses) {
      if (!u.user || !node_within(u.user, g))
        fail(g, "use list of '" + v.name + "' names a node outside this graph and its subgraphs");
      const auto idx = static_cast<size_t>(u.input_index);
      if (u.input_index < 0 || idx >= u.user->inputs.size() || u.user->inputs[idx] != &v)
        fail(g, "use list of '" + v.name + "' names input " + std::to_string(u.input_index) + " of " +
                    u.user->describe() + ", which is not that value");
    }
  }

  static void check_attrs(const Graph& g, const Node& n) {
    std::set<std::string_view> names;
    for (const auto& a : n.attrs) {
      if (!names.insert(a.name).second) fail(g, n.describe() + " has attribute '" + a.name + "' twice");
      if (!kind_matches(a))
        fail(g, n.describe() + " attribute '" + a.name + "' holds a value of another kind than it declares");
    }
  }
};

void check_domains(const Model& m, const Graph& g) {
  for (const Node* n : g.nodes()) {
    const int64_t v = m.opset(n->domain);
    if (v == 0)
      fail(g, n->describe() + " uses domain '" + n->domain + "', which the model does not import (opset_import)");
    if (n->since_version > v)
      fail(g, n->describe() + " has since_version " + std::to_string(n->since_version) +
                  " above the imported opset " + std::to_string(v));
    for (const Graph* sg : n->subgraphs()) check_domains(m, *sg);
  }
}

}  // namespace

void verify_graph(const Graph& g) {
  std::vector<const DefinedSet*> scopes;
  Verifier().graph(g, scopes);
}

void verify(const Model& m) {
  if (!m.graph) throw ModelError("invalid IR: the model has no graph");
  const Graph& g = *m.graph;
  if (g.parent()) fail(g, "the top-level graph has a parent graph");
  for (const Value* v : g.inputs)
    if (v && !v->has_type && !v->is_constant()) fail(g, "graph input '" + v->name + "' declares no type");
  for (const Value* v : g.outputs)
    if (v && !v->has_type && v->dtype == DType::Undefined)
      fail(g, "graph output '" + v->name + "' declares no type");
  verify_graph(g);
  check_domains(m, g);
}

}  // namespace mcc::ir
