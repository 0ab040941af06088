// Graph mutation with use-list bookkeeping, scoped name lookup and stable topological sorting.
#include "ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace mcc::ir {

// ---------------------------------------------------------------- Node

std::string Node::describe() const {
  std::string s = "node '" + name + "' (" + (domain.empty() ? "" : domain + ".") + op_type;
  if (since_version > 0) s += "-" + std::to_string(since_version);
  return s + ")";
}

const Attribute* Node::attr(std::string_view n) const {
  for (const auto& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}
Attribute* Node::attr(std::string_view n) {
  for (auto& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

namespace {
template <class T>
const T& get_attr_as(const Node& node, const Attribute& a, const char* kind) {
  if (const T* v = std::get_if<T>(&a.value)) return *v;
  throw ModelError(node.describe() + ": attribute '" + a.name + "' must be " + kind);
}
}  // namespace

int64_t Node::attr_int(std::string_view n, int64_t def) const {
  const Attribute* a = attr(n);
  return a ? get_attr_as<int64_t>(*this, *a, "an int") : def;
}
float Node::attr_float(std::string_view n, float def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (const auto* i = std::get_if<int64_t>(&a->value)) return static_cast<float>(*i);
  return get_attr_as<float>(*this, *a, "a float");
}
std::string Node::attr_string(std::string_view n, const std::string& def) const {
  const Attribute* a = attr(n);
  return a ? get_attr_as<std::string>(*this, *a, "a string") : def;
}
std::vector<int64_t> Node::attr_ints(std::string_view n, const std::vector<int64_t>& def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (std::holds_alternative<std::monostate>(a->value)) return {};
  return get_attr_as<std::vector<int64_t>>(*this, *a, "a list of ints");
}
std::vector<float> Node::attr_floats(std::string_view n, const std::vector<float>& def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (std::holds_alternative<std::monostate>(a->value)) return {};
  return get_attr_as<std::vector<float>>(*this, *a, "a list of floats");
}
std::vector<std::string> Node::attr_strings(std::string_view n, const std::vector<std::string>& def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (std::holds_alternative<std::monostate>(a->value)) return {};
  return get_attr_as<std::vector<std::string>>(*this, *a, "a list of strings");
}
const Tensor* Node::attr_tensor(std::string_view n) const {
  const Attribute* a = attr(n);
  return a ? &get_attr_as<Tensor>(*this, *a, "a tensor") : nullptr;
}
Graph* Node::attr_graph(std::string_view n) const {
  const Attribute* a = attr(n);
  return a ? get_attr_as<std::shared_ptr<Graph>>(*this, *a, "a graph").get() : nullptr;
}
void Node::set_attr(Attribute a) {
  if (Attribute* e = attr(a.name)) *e = std::move(a);
  else attrs.push_back(std::move(a));
}

std::string Node::SubgraphSlot::label() const {
  return index < 0 ? attr->name : attr->name + "[" + std::to_string(index) + "]";
}

std::vector<Node::SubgraphSlot> Node::subgraph_slots() const {
  std::vector<SubgraphSlot> out;
  for (const auto& a : attrs) {
    if (const auto* sg = std::get_if<std::shared_ptr<Graph>>(&a.value)) {
      if (*sg) out.push_back({&a, -1, sg->get()});
    } else if (const auto* sgs = std::get_if<std::vector<std::shared_ptr<Graph>>>(&a.value)) {
      for (size_t k = 0; k < sgs->size(); ++k)
        if ((*sgs)[k]) out.push_back({&a, static_cast<int>(k), (*sgs)[k].get()});
    }
  }
  return out;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& s : subgraph_slots()) out.push_back(s.graph);
  return out;
}

int64_t count_nodes(const Graph& g) {
  int64_t n = 0;
  for (const Node* node : g.nodes()) {
    ++n;
    for (const Graph* sg : node->subgraphs()) n += count_nodes(*sg);
  }
  return n;
}

int64_t count_initializer_bytes(const Graph& g) {
  int64_t b = 0;
  for (const Value* v : g.initializers)
    if (v->initializer) b += static_cast<int64_t>(v->initializer->nbytes());
  for (const Node* node : g.nodes())
    for (const Graph* sg : node->subgraphs()) b += count_initializer_bytes(*sg);
  return b;
}

int Node::num_inputs() const {
  int n = static_cast<int>(inputs.size());
  while (n > 0 && inputs[static_cast<size_t>(n - 1)] == nullptr) --n;
  return n;
}

// ---------------------------------------------------------------- Graph: values

Graph::~Graph() = default;

Value& Graph::add_value(std::string name) {
  if (!name.empty() && by_name_.count(name))
    throw ModelError("value name '" + name + "' is defined twice in graph '" + this->name + "'");
  auto v = std::make_unique<Value>();
  v->name = std::move(name);
  v->owner = this;
  Value* p = v.get();
  value_storage_.push_back(std::move(v));
  if (!p->name.empty()) by_name_.emplace(p->name, p);
  return *p;
}

Value& Graph::add_initializer(std::string name, Tensor t) {
  Value& v = add_value(std::move(name));
  v.dtype = t.dtype();
  v.shape = Shape::of(t.dims());
  v.initializer = std::move(t);
  initializers.push_back(&v);
  return v;
}

Value* Graph::find_value(std::string_view n) const {
  auto it = by_name_.find(n);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::lookup(std::string_view n) const {
  for (const Graph* g = this; g; g = g->parent_)
    if (Value* v = g->find_value(n)) return v;
  return nullptr;
}

std::string Graph::unique_name(std::string_view hint) const {
  std::string base(hint.empty() ? "v" : hint);
  if (!lookup(base)) return base;
  for (int i = 1;; ++i) {
    std::string c = base + "_" + std::to_string(i);
    if (!lookup(c)) return c;
  }
}

void Graph::rename_value(Value& v, std::string new_name) {
  MCC_CHECK(v.owner == this, "rename_value: value not owned by this graph");
  if (new_name == v.name) return;
  if (by_name_.count(new_name)) throw ModelError("cannot rename '" + v.name + "': '" + new_name + "' exists");
  by_name_.erase(v.name);
  v.name = std::move(new_name);
  if (!v.name.empty()) by_name_.emplace(v.name, &v);
}

void Graph::remove_value(Value& v) {
  MCC_CHECK(v.owner == this, "remove_value: value not owned by this graph");
  MCC_CHECK(v.uses.empty() && v.producer == nullptr, "remove_value: value '" + v.name + "' is still used");
  auto drop = [&](std::vector<Value*>& list) { list.erase(std::remove(list.begin(), list.end(), &v), list.end()); };
  drop(initializers);
  drop(value_info);
  drop(inputs);
  MCC_CHECK(std::find(outputs.begin(), outputs.end(), &v) == outputs.end(), "remove_value: value is a graph output");
  if (!v.name.empty()) {
    auto it = by_name_.find(v.name);
    if (it != by_name_.end() && it->second == &v) by_name_.erase(it);
  }
  auto it = std::find_if(value_storage_.begin(), value_storage_.end(), [&](const auto& p) { return p.get() == &v; });
  value_storage_.erase(it);
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  out.reserve(value_storage_.size());
  for (const auto& v : value_storage_) out.push_back(v.get());
  return out;
}

// ---------------------------------------------------------------- Graph: nodes

namespace {
void add_use(Value* v, Node* n, int i) { if (v) v->uses.push_back(Use{n, i}); }
void drop_use(Value* v, Node* n, int i) {
  if (!v) return;
  auto it = std::find(v->uses.begin(), v->uses.end(), Use{n, i});
  if (it != v->uses.end()) v->uses.erase(it);
}
}  // namespace

Node& Graph::add_node_with_outputs(std::string op_type, std::string domain, std::string name,
                                   const std::vector<Value*>& ins, const std::vector<Value*>& outs,
                                   const Node* before) {
  auto n = std::make_unique<Node>();
  n->op_type = std::move(op_type);
  n->domain = std::move(domain);
  n->name = std::move(name);
  n->owner = this;
  Node* p = n.get();
  for (size_t i = 0; i < ins.size(); ++i) {
    p->inputs.push_back(ins[i]);
    add_use(ins[i], p, static_cast<int>(i));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    Value* o = outs[i];
    if (o) {
      MCC_CHECK(o->owner == this, "add_node: output value belongs to another graph");
      if (o->producer)
        throw ModelError("value '" + o->name + "' is produced by two nodes ('" + o->producer->name +
                         "' and '" + p->name + "')");
      o->producer = p;
      o->output_index = static_cast<int>(i);
    }
    p->outputs.push_back(o);
  }
  node_storage_.push_back(std::move(n));
  if (before) {
    auto it = std::find(order_.begin(), order_.end(), before);
    order_.insert(it, p);
  } else {
    order_.push_back(p);
  }
  return *p;
}

Node& Graph::add_node(std::string op_type, std::string domain, std::string name,
                      const std::vector<Value*>& ins, const std::vector<std::string>& output_names,
                      const Node* before) {
  std::vector<Value*> outs;
  for (const auto& on : output_names) outs.push_back(on.empty() ? nullptr : &add_value(on));
  return add_node_with_outputs(std::move(op_type), std::move(domain), std::move(name), ins, outs, before);
}

void Graph::set_input(Node& n, size_t i, Value* v) {
  if (n.inputs.size() <= i) n.inputs.resize(i + 1, nullptr);
  drop_use(n.inputs[i], &n, static_cast<int>(i));
  n.inputs[i] = v;
  add_use(v, &n, static_cast<int>(i));
}

void Graph::replace_all_uses(Value& from, Value& to) {
  if (&from == &to) return;
  auto uses = from.uses;
  for (const Use& u : uses) {
    u.user->inputs[static_cast<size_t>(u.input_index)] = &to;
    to.uses.push_back(u);
  }
  from.uses.clear();
  for (auto& o : outputs)
    if (o == &from) o = &to;
}

void Graph::erase(Node& n) {
  MCC_CHECK(n.owner == this, "erase: node not owned by this graph");
  for (Value* o : n.outputs) {
    if (!o) continue;
    if (!o->uses.empty()) throw InternalError("erase: output '" + o->name + "' of " + n.describe() + " is still used");
    MCC_CHECK(std::find(outputs.begin(), outputs.end(), o) == outputs.end(), "erase: output is a graph output");
  }
  for (size_t i = 0; i < n.inputs.size(); ++i) drop_use(n.inputs[i], &n, static_cast<int>(i));
  for (Value* o : n.outputs)
    if (o) { o->producer = nullptr; remove_value(*o); }
  order_.erase(std::find(order_.begin(), order_.end(), &n));
  auto it = std::find_if(node_storage_.begin(), node_storage_.end(), [&](const auto& p) { return p.get() == &n; });
  node_storage_.erase(it);
}

namespace {
// Values a node needs from its own graph, including those captured by its subgraphs.
void collect_needed(const Node& n, const Graph& g, std::vector<const Value*>& out) {
  for (const Value* v : n.inputs)
    if (v && v->owner == &g) out.push_back(v);
  for (const Graph* s : n.subgraphs()) {
    for (const Node* sn : s->nodes()) {
      for (const Value* v : sn->inputs)
        if (v && v->owner == &g) out.push_back(v);
      collect_needed(*sn, g, out);
    }
    for (const Value* v : s->outputs)
      if (v && v->owner == &g) out.push_back(v);
  }
}
}  // namespace

void Graph::topo_sort() {
  // Kahn's algorithm, picking the earliest ready node in the current order (stable).
  const size_t n = order_.size();
  std::unordered_map<const Node*, size_t> pos;
  for (size_t i = 0; i < n; ++i) pos[order_[i]] = i;
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::vector<const Value*> needed;
    collect_needed(*order_[i], *this, needed);
    std::unordered_set<size_t> producers;
    for (const Value* v : needed) {
      if (v->producer && v->producer->owner == this) producers.insert(pos.at(v->producer));
    }
    for (size_t p : producers) {
      if (p == i) throw ModelError(order_[i]->describe() + " uses its own output (cycle)");
      consumers[p].push_back(i);
      ++pending[i];
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<Node*> sorted;
  sorted.reserve(n);
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    sorted.push_back(order_[i]);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.insert(c);
  }
  if (sorted.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (pending[i] != 0) throw ModelError("graph '" + name + "' has a cycle through " + order_[i]->describe());
  }
  order_ = std::move(sorted);
}

// ---------------------------------------------------------------- Model

int64_t Model::opset(std::string_view d) const {
  const bool dflt = d.empty() || d == "ai.onnx";
  for (const auto& o : opset_imports)
    if (o.domain == d || (dflt && (o.domain.empty() || o.domain == "ai.onnx"))) return o.version;
  return 0;
}

void captured_values(const Graph& g, const Graph& outer, std::unordered_set<const Value*>& out) {
  for (const Node* n : g.nodes()) {
    for (const Value* v : n->inputs)
      if (v && v->owner == &outer) out.insert(v);
    for (const Graph* s : n->subgraphs()) captured_values(*s, outer, out);
  }
  for (const Value* v : g.outputs)
    if (v && v->owner == &outer) out.insert(v);
}

}  // namespace mcc::ir
