// Raising a model's ai.onnx opset (see common/opset_upgrade.h).
#include "transforms/common/opset_upgrade.h"

#include <optional>
#include <vector>

#include "ir/errors.h"
#include "ir/op_facts.h"
#include "ir/op_schema.h"
#include "transforms/common/opset_rewrites.h"

namespace mcc::transforms {
namespace {

bool in_default_domain(const ir::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

/// A rewrite step and the schema version of the node it starts from.
struct Step {
  const RaiseStep* step;
  int from_version;
};

/// One node and the steps a raise takes it through, oldest first.
struct NodeSteps {
  ir::Graph* graph;
  ir::Node* node;
  std::vector<Step> steps;
};

/// The steps of a node of schema version `v` (at the model's opset) raised to `to`: each rewrite
/// whose range holds the version reached so far, following a change of op type.
std::vector<Step> steps_for(std::string op, int v, int64_t to) {
  std::vector<Step> out;
  for (;;) {
    const ir::RaiseRewrite* next = nullptr;
    for (const ir::RaiseRewrite& r : ir::raise_rewrites(op))
      if (r.oldest <= v && v < r.at && r.at <= to) {
        next = &r;
        break;
      }
    if (!next) return out;
    const RaiseStep* s = raise_step(next->op, next->at);
    if (!s) throw InternalError("opset raise: no rewrite for " + op + "-" + std::to_string(next->at));
    out.push_back({s, v});
    v = next->at;
    if (!next->becomes.empty()) op = std::string(next->becomes);
  }
}

std::vector<NodeSteps> collect(ir::Model& m, int64_t from, int64_t to) {
  std::vector<NodeSteps> out;
  if (to <= from || !m.graph) return out;
  ir::for_each_graph(*m.graph, [&](ir::Graph& g) {
    for (ir::Node* n : g.nodes()) {
      if (!in_default_domain(*n)) continue;
      const ir::OpTypeInfo* info = ir::op_type_info(n->op_type, "", from);
      if (!info) continue;
      auto steps = steps_for(n->op_type, info->since_version, to);
      if (!steps.empty()) out.push_back({&g, n, std::move(steps)});
    }
  });
  return out;
}

std::string first_refusal(const std::vector<NodeSteps>& todo, const RaiseFacts& facts) {
  for (const NodeSteps& t : todo)
    for (const auto& [s, v] : t.steps) {
      if (!s->refusal) continue;
      if (const std::string why = s->refusal(*t.node, facts); !why.empty()) {
        const std::string op(s->op);
        return t.node->describe() + ": " + op + "-" + std::to_string(v) + " changed meaning by " + op + "-" +
               std::to_string(s->at) + ", and no rewrite keeps it here: " + why;
      }
    }
  return "";
}

}  // namespace

bool rewritten_on_raise(const std::string& op, int64_t at) {
  for (const ir::RaiseRewrite& r : ir::raise_rewrites(op))
    if (r.at == at) return true;
  return false;
}

std::string raise_refusal(const ir::Model& m, int64_t from, int64_t to) {
  const std::vector<NodeSteps> todo = collect(const_cast<ir::Model&>(m), from, to);
  if (todo.empty()) return "";
  const RaiseFacts facts(m, to);
  return first_refusal(todo, facts);
}

int64_t upgrade_opset(ir::Model& m, int64_t from, int64_t to) {
  if (to <= from) return 0;
  const std::vector<NodeSteps> todo = collect(m, from, to);
  int64_t applied = 0;
  if (!todo.empty()) {
    const RaiseFacts facts(m, to);  // read before any node changes
    if (const std::string why = first_refusal(todo, facts); !why.empty())
      throw UnsupportedError("the ai.onnx opset cannot be raised from " + std::to_string(from) + " to " + std::to_string(to) +
                             ": " + why);
    for (const NodeSteps& t : todo)
      for (const auto& [s, v] : t.steps) {
        s->apply(*t.graph, *t.node, facts);
        ++applied;
      }
  }
  for (auto& imp : m.opset_imports)
    if (imp.domain.empty() || imp.domain == "ai.onnx") imp.version = to;
  ir::for_each_graph(*m.graph, [&](ir::Graph& g) {
    for (ir::Node* n : g.nodes())
      if (in_default_domain(*n)) n->since_version = static_cast<int>(to);
  });
  return applied;
}

}  // namespace mcc::transforms
