// RewriteDriver and the graph-surgery helpers shared by local rewrites (see rewrite.h).
#include "transforms/common/rewrite.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "ir/errors.h"

namespace mcc::transforms {

// ---------------------------------------------------------------- RewriteLog

void RewriteLog::declare(const std::string& key) {
  if (counts_.emplace(key, 0).second) order_.push_back(key);
}

void RewriteLog::count(const std::string& key, int64_t n) {
  declare(key);
  counts_[key] += n;
}

void RewriteLog::add(const std::string& key, const std::string& what) {
  count(key, 1);
  names_[key].push_back(what);
}

void RewriteLog::add_once(const std::string& key, const std::string& what) {
  auto it = names_.find(key);
  if (it != names_.end() && std::find(it->second.begin(), it->second.end(), what) != it->second.end()) return;
  add(key, what);
}

int64_t RewriteLog::get(const std::string& key) const {
  auto it = counts_.find(key);
  return it == counts_.end() ? 0 : it->second;
}

int64_t RewriteLog::total() const {
  int64_t t = 0;
  for (const auto& [k, v] : counts_) t += v;
  return t;
}

nlohmann::ordered_json RewriteLog::stats() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& k : order_) j[k] = counts_.at(k);
  return j;
}

nlohmann::ordered_json RewriteLog::record() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& k : order_) {
    auto it = names_.find(k);
    if (it != names_.end() && !it->second.empty()) j[k] = it->second;
  }
  return j;
}

// ---------------------------------------------------------------- RewriteDriver

RewriteDriver& RewriteDriver::on(std::vector<std::string> ops, RewriteFn fn) {
  rules_.push_back(Rule{std::move(ops), std::move(fn)});
  return *this;
}

int64_t RewriteDriver::run(ir::Graph& g, RewriteLog& log) {
  int64_t applied = 0;
  for (int sweep = 0; sweep < max_sweeps_; ++sweep) {
    const int64_t n = run_graph(g, log);
    applied += n;
    if (n == 0) return applied;
  }
  spdlog::debug("rewrite: graph '{}' still changing after {} sweeps; stopping", g.name, max_sweeps_);
  return applied;
}

int64_t RewriteDriver::run_graph(ir::Graph& g, RewriteLog& log) {
  // Target-op index: op type -> rules, plus rules for every node.
  std::unordered_map<std::string, std::vector<const Rule*>> by_op;
  std::vector<const Rule*> any;
  for (const Rule& r : rules_) {
    if (r.ops.empty()) any.push_back(&r);
    for (const auto& op : r.ops) by_op[op].push_back(&r);
  }
  int64_t applied = 0;
  g.topo_sort();
  const std::vector<ir::Node*> snapshot = g.nodes();
  std::unordered_set<const ir::Node*> alive(snapshot.begin(), snapshot.end());
  for (ir::Node* n : snapshot) {
    if (!alive.count(n)) continue;
    if (recurse_)
      for (ir::Graph* sg : n->subgraphs()) applied += run_graph(*sg, log);
    std::vector<const Rule*> rules = any;
    if (n->domain.empty() || n->domain == "ai.onnx") {
      auto it = by_op.find(n->op_type);
      if (it != by_op.end()) rules.insert(rules.end(), it->second.begin(), it->second.end());
    }
    for (const Rule* r : rules) {
      bool changed = false;
      const std::string where = n->describe();
      try {
        changed = r->fn(g, *n, log);
      } catch (Error& e) {
        if (std::string(e.what()).find(where) == std::string::npos) e.add_context(where);
        throw;
      }
      if (changed) {
        ++applied;
        // The rule may have erased or added nodes: refresh what is alive, go on with the next node.
        alive = std::unordered_set<const ir::Node*>(g.nodes().begin(), g.nodes().end());
        break;
      }
    }
  }
  return applied;
}

// ---------------------------------------------------------------- helpers

bool is_any_graph_output(const ir::Value& v) {
  if (!v.owner) return false;
  bool found = false;
  ir::for_each_graph(*v.owner, [&](ir::Graph& g) {
    if (!found) found = std::find(g.outputs.begin(), g.outputs.end(), &v) != g.outputs.end();
  });
  return found;
}

bool is_constant(const ir::Value* v) { return v && v->initializer.has_value() && !v->is_graph_input; }

const ir::Tensor& constant_of(const ir::Value& v) {
  MCC_CHECK(is_constant(&v), "constant_of: '" + v.name + "' is not a constant");
  return *v.initializer;
}

ir::Node* producer_in(const ir::Graph& g, const ir::Value* v, std::initializer_list<std::string_view> ops) {
  if (!v || !v->producer || v->producer->owner != &g) return nullptr;
  for (auto op : ops)
    if (v->producer->is(op)) return v->producer;
  return nullptr;
}

bool has_single_use(const ir::Value& v) { return v.uses.size() == 1 && !is_any_graph_output(v); }

void replace_value(ir::Value& from, ir::Value& to) {
  if (&from == &to) return;
  MCC_CHECK(from.owner != nullptr, "replace_value: value without a graph");
  from.owner->replace_all_uses(from, to);
  ir::for_each_graph(*from.owner, [&](ir::Graph& g) {
    for (auto& o : g.outputs)
      if (o == &from) o = &to;
  });
}

void take_over_output(ir::Graph& g, ir::Node& dead, ir::Value& gone, ir::Value& keep) {
  MCC_CHECK(gone.producer == &dead && keep.owner == &g, "take_over_output: values do not match the node");
  const std::string name = gone.name;
  keep.dtype = gone.dtype != ir::DType::Undefined ? gone.dtype : keep.dtype;
  if (gone.has_type || gone.shape.rank_known()) keep.shape = gone.shape;
  keep.has_type = keep.has_type || gone.has_type;
  keep.type_passthrough = gone.type_passthrough;
  keep.doc_string = gone.doc_string;
  keep.metadata_props = gone.metadata_props;
  keep.proto_passthrough = gone.proto_passthrough;
  // keep's old uses other than by `dead` stay; dead's use of keep goes away with dead.
  replace_value(gone, keep);
  for (ir::Value* o : dead.outputs)
    if (o && o != &gone && !o->uses.empty())
      throw InternalError("take_over_output: output '" + o->name + "' of " + dead.describe() + " is still used");
  detach_subgraph_captures(dead);
  g.erase(dead);
  g.rename_value(keep, name);
}

void replace_with_constants(ir::Graph& g, ir::Node& n, std::vector<ir::Tensor> outputs) {
  MCC_CHECK(outputs.size() == n.outputs.size(), "replace_with_constants: one tensor per output");
  std::vector<std::pair<ir::Value*, std::string>> made;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    ir::Value* o = n.outputs[i];
    if (!o || (o->uses.empty() && !is_any_graph_output(*o))) continue;
    ir::Value& c = g.add_initializer(g.unique_name(o->name + "_const"), fresh_tensor(std::move(outputs[i])));
    c.has_type = o->has_type;
    c.doc_string = o->doc_string;
    c.metadata_props = o->metadata_props;
    replace_value(*o, c);
    made.emplace_back(&c, o->name);
  }
  std::vector<ir::Value*> inputs;
  for (ir::Value* v : n.inputs)
    if (v && std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
  detach_subgraph_captures(n);
  g.erase(n);
  for (auto& [v, name] : made) g.rename_value(*v, name);
  for (ir::Value* in : inputs) drop_if_unused(in);
}

bool drop_if_unused(ir::Value* v) {
  if (!v || !v->initializer || v->is_graph_input || !v->uses.empty() || v->producer) return false;
  if (is_any_graph_output(*v)) return false;
  v->owner->remove_value(*v);
  return true;
}

void detach_subgraph_captures(const ir::Node& n) {
  for (ir::Graph* sg : n.subgraphs()) {
    for (ir::Node* inner : sg->nodes()) {
      for (size_t i = 0; i < inner->inputs.size(); ++i) {
        ir::Value* v = inner->inputs[i];
        if (!v || v->owner == sg) continue;
        auto& uses = v->uses;
        const ir::Use u{inner, static_cast<int>(i)};
        uses.erase(std::remove(uses.begin(), uses.end(), u), uses.end());
      }
      detach_subgraph_captures(*inner);
    }
  }
}

ir::Tensor fresh_tensor(ir::Tensor t) {
  t.name.clear();
  t.doc_string.clear();
  t.external.reset();
  t.proto_passthrough.clear();
  return t;
}

}  // namespace mcc::transforms
