// The in-house IR: Value, Node, Graph, Model. SSA values with use lists; subgraphs (If/Loop/Scan
// bodies) are real Graphs owned through attributes, whose nodes may use outer-scope Values
// directly (those uses are recorded on the outer Value, so dead-code elimination sees them).
// Everything ONNX carries that mcc does not model is kept as opaque bytes for a lossless save.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/attribute.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace mcc::ir {

struct Node;
class Graph;

using MetadataProps = std::vector<std::pair<std::string, std::string>>;

struct Use {
  Node* user;
  int input_index;
  bool operator==(const Use&) const = default;
};

struct Value {
  std::string name;
  DType dtype = DType::Undefined;  // element type when the value is a tensor and it is known
  Shape shape;                     // rank unknown by default
  bool has_type = false;           // a type was declared (graph input/output, value_info)
  /// Serialized TypeProto when the declared type is not a plain tensor type (sequence, map,
  /// optional, sparse) or carries extras (denotation); exported verbatim.
  OpaqueProto type_passthrough;

  Node* producer = nullptr;
  int output_index = -1;
  std::vector<Use> uses;           // includes uses from nodes inside subgraphs (captures)
  Graph* owner = nullptr;

  std::optional<Tensor> initializer;  // set iff this value is an initializer
  bool is_graph_input = false;

  // ValueInfoProto passthrough (graph input/output/value_info entries).
  std::string doc_string;
  MetadataProps metadata_props;
  std::string proto_passthrough;

  bool is_constant() const { return initializer.has_value(); }
};

struct Node {
  std::string name, domain, op_type;
  int since_version = 0;          // opset version of the node's domain in this model
  std::vector<Value*> inputs;     // nullptr = omitted optional input ("" in ONNX)
  std::vector<Value*> outputs;    // nullptr = omitted optional output
  std::vector<Attribute> attrs;
  std::string doc_string;
  MetadataProps metadata_props;
  std::string proto_passthrough;  // serialized NodeProto fields mcc does not model
  Graph* owner = nullptr;

  bool is(std::string_view op, std::string_view dom = "") const {
    return op_type == op && (domain == dom || (dom.empty() && domain == "ai.onnx"));
  }
  /// "'conv3' (Conv-11)" for messages.
  std::string describe() const;

  const Attribute* attr(std::string_view name) const;
  Attribute* attr(std::string_view name);
  bool has_attr(std::string_view name) const { return attr(name) != nullptr; }
  // Typed getters: absent -> default; present with the wrong kind -> ModelError naming the node.
  int64_t attr_int(std::string_view name, int64_t def) const;
  float attr_float(std::string_view name, float def) const;
  std::string attr_string(std::string_view name, const std::string& def) const;
  std::vector<int64_t> attr_ints(std::string_view name, const std::vector<int64_t>& def = {}) const;
  std::vector<float> attr_floats(std::string_view name, const std::vector<float>& def = {}) const;
  std::vector<std::string> attr_strings(std::string_view name, const std::vector<std::string>& def = {}) const;
  const Tensor* attr_tensor(std::string_view name) const;   // nullptr when absent
  Graph* attr_graph(std::string_view name) const;           // nullptr when absent
  void set_attr(Attribute a);                               // replaces by name or appends

  /// One subgraph held by an attribute: a GRAPH attribute (index -1) or the k-th of a GRAPHS one.
  struct SubgraphSlot {
    const Attribute* attr;
    int index;
    Graph* graph;
    /// "then_branch", or "branches[2]" for the k-th graph of a GRAPHS attribute.
    std::string label() const;
  };
  /// The subgraphs held by this node's attributes (If/Loop/Scan bodies...), in attribute order,
  /// absent (null) graphs skipped. The one walk over graph-valued attributes.
  std::vector<SubgraphSlot> subgraph_slots() const;
  std::vector<Graph*> subgraphs() const;

  /// Number of inputs present (trailing omitted inputs not counted).
  int num_inputs() const;
  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
};

class Graph {
 public:
  explicit Graph(Graph* parent = nullptr) : parent_(parent) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  Graph* parent() const { return parent_; }
  void set_parent(Graph* p) { parent_ = p; }

  // ---- values
  /// A new value owned by this graph. The name must be unique in this scope (throws ModelError).
  Value& add_value(std::string name);
  Value& add_initializer(std::string name, Tensor t);
  /// The value with this name in this graph only; nullptr when absent.
  Value* find_value(std::string_view name) const;
  /// Looks up this graph, then enclosing graphs (outer-scope resolution).
  Value* lookup(std::string_view name) const;
  /// Deterministic unique name: hint, hint_1, hint_2, ... (unique across this and enclosing scopes).
  std::string unique_name(std::string_view hint) const;
  void rename_value(Value& v, std::string new_name);
  /// Removes a value with no producer and no uses (and drops it from initializers/value_info).
  void remove_value(Value& v);
  /// Values in creation order.
  std::vector<Value*> values() const;

  // ---- nodes (kept in a valid topological order)
  /// Appends a node at the end (or before `before` when given). Output values are created with
  /// the given names; nullptr inputs are omitted optional inputs.
  Node& add_node(std::string op_type, std::string domain, std::string name,
                 const std::vector<Value*>& inputs, const std::vector<std::string>& output_names,
                 const Node* before = nullptr);
  /// Appends a node whose outputs are existing producer-less values of this graph.
  Node& add_node_with_outputs(std::string op_type, std::string domain, std::string name,
                              const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                              const Node* before = nullptr);
  const std::vector<Node*>& nodes() const { return order_; }
  void set_input(Node& n, size_t i, Value* v);        // keeps use lists right
  void replace_all_uses(Value& from, Value& to);       // includes uses inside subgraphs and graph outputs
  /// Erases a node; its outputs must have no uses and not be graph outputs. The outputs are removed.
  void erase(Node& n);
  /// Reorders nodes topologically (stable: keeps the given order where it is valid). Throws
  /// ModelError naming a node on a cycle or with an undefined input.
  void topo_sort();

  std::string name, doc_string;
  std::vector<Value*> inputs, outputs;   // graph interface, in order
  std::vector<Value*> initializers;      // in file order
  std::vector<Value*> value_info;        // values that had a value_info entry, in order
  std::vector<OpaqueProto> sparse_initializers, quantization_annotation;
  MetadataProps metadata_props;
  std::string proto_passthrough;         // serialized GraphProto fields mcc does not model

  /// The declarations, as read, of a value declared in more than one role here (input, output,
  /// value_info: a Value holds one declaration) or declared as an output here while an enclosing
  /// graph owns it. Export writes each role's bytes back while the value has that name and the
  /// same declaration fields (`fingerprint`) as at import; otherwise the value's own fields.
  struct SharedDecl {
    std::string fingerprint;
    std::map<std::string, std::string, std::less<>> by_role;  // "input"/"output"/"value_info" -> ValueInfoProto
  };
  std::map<std::string, SharedDecl, std::less<>> shared_decls;  // by value name

 private:
  Graph* parent_ = nullptr;
  std::vector<std::unique_ptr<Value>> value_storage_;
  std::vector<std::unique_ptr<Node>> node_storage_;
  std::vector<Node*> order_;
  std::map<std::string, Value*, std::less<>> by_name_;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
};

struct Model {
  int64_t ir_version = 0;
  std::vector<OpsetImport> opset_imports;  // order preserved
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  MetadataProps metadata_props;
  std::vector<OpaqueProto> functions, training_info;  // re-emitted verbatim
  std::string proto_passthrough;                      // ModelProto fields mcc does not model
  /// Which optional scalar fields were present in the file (proto2 presence), for a lossless save.
  uint32_t presence_bits = 0;
  std::unique_ptr<Graph> graph;
  /// Folder of the file the model came from (external data is resolved against it).
  std::string base_dir;

  /// Opset version imported for a domain ("" and "ai.onnx" are the same); 0 when not imported.
  int64_t opset(std::string_view domain) const;
};

/// Calls f(graph) for g and, depth first, every subgraph held in node attributes.
template <class F>
void for_each_graph(Graph& g, F&& f) {
  f(g);
  for (Node* n : g.nodes())
    for (Graph* sg : n->subgraphs()) for_each_graph(*sg, f);
}

/// Nodes of g and of every nested subgraph.
int64_t count_nodes(const Graph& g);
/// Bytes of the initializer tensors of g and of every nested subgraph.
int64_t count_initializer_bytes(const Graph& g);
/// Adds to `out` the values of `outer` that the subgraph g (or a graph nested in it) reads or
/// returns: what a node holding g captures from its own graph.
void captured_values(const Graph& g, const Graph& outer, std::unordered_set<const Value*>& out);

}  // namespace mcc::ir
