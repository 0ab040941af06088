// The local-rewrite driver and the graph-surgery helpers every rewrite shares.
//
// A rewrite rule names the op types it targets and a function that tries one node: matching is
// side-effect free, and the function returns true only when it changed the graph. The driver
// indexes rules by target op, walks each graph in topological order, recurses into If/Loop/Scan
// bodies when asked, repeats until a sweep changes nothing (capped), adds "node 'x' (Op-N)"
// context to errors, and counts applications per rule in a RewriteLog. Individual rules never
// loop, recurse or count by themselves.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"

namespace mcc::transforms {

/// What a stage did: counters (stats) and, per counter, the names of the nodes concerned (the
/// stage's record, so the sidecar shows each decision). Ordered, so output is deterministic.
class RewriteLog {
 public:
  /// Counts one application under `key` and records `what` (usually a node name).
  void add(const std::string& key, const std::string& what);
  /// Like add, but only the first time this (key, what) pair is seen.
  void add_once(const std::string& key, const std::string& what);
  /// Counts without a record entry.
  void count(const std::string& key, int64_t n = 1);
  int64_t get(const std::string& key) const;
  /// Sum of every counter (0: nothing happened).
  int64_t total() const;
  /// {"key": count, ...} in first-use order.
  nlohmann::ordered_json stats() const;
  /// {"key": ["name", ...], ...} in first-use order.
  nlohmann::ordered_json record() const;
  /// Registers a key so it shows (as 0) even when nothing happened.
  void declare(const std::string& key);

 private:
  std::vector<std::string> order_;
  std::map<std::string, int64_t> counts_;
  std::map<std::string, std::vector<std::string>> names_;
};

/// Tries one node; returns true when it changed the graph (the node may have been erased).
using RewriteFn = std::function<bool(ir::Graph& g, ir::Node& n, RewriteLog& log)>;

class RewriteDriver {
 public:
  /// Adds a rule for nodes whose op_type is one of `ops` in the default ONNX domain; an empty
  /// list targets every node.
  RewriteDriver& on(std::vector<std::string> ops, RewriteFn fn);
  RewriteDriver& recurse_subgraphs(bool on) { recurse_ = on; return *this; }
  RewriteDriver& max_sweeps(int n) { max_sweeps_ = n; return *this; }
  /// Runs every rule over g (and its subgraphs when asked) to a fixpoint. Returns the number of
  /// successful applications.
  int64_t run(ir::Graph& g, RewriteLog& log);

 private:
  int64_t run_graph(ir::Graph& g, RewriteLog& log);
  struct Rule { std::vector<std::string> ops; RewriteFn fn; };
  std::vector<Rule> rules_;
  bool recurse_ = true;
  int max_sweeps_ = 16;
};

// ---------------------------------------------------------------- helpers for rules

/// True when v is listed as an output of its own graph or of any graph nested inside it (a
/// subgraph may return an outer value directly; that is a use the use list does not show).
bool is_any_graph_output(const ir::Value& v);
/// A constant the rewrite may read: an initializer that is not also a graph input (a graph input
/// with an initializer is only a default; the caller may feed another value).
bool is_constant(const ir::Value* v);
/// The tensor of a constant value (is_constant(v) must hold).
const ir::Tensor& constant_of(const ir::Value& v);
/// The producer of v when it is in graph g and has one of the op types; nullptr otherwise.
ir::Node* producer_in(const ir::Graph& g, const ir::Value* v, std::initializer_list<std::string_view> ops);
/// v has exactly one consumer (no subgraph captures beyond it) and is no graph output.
bool has_single_use(const ir::Value& v);
/// Moves every use of `from` to `to`: node inputs (subgraph captures included) and graph output
/// slots of from's graph and every graph nested in it.
void replace_value(ir::Value& from, ir::Value& to);
/// `keep` takes over `gone`'s role: its uses, graph-output slots, name and declared type; then
/// `dead` (gone's producer, whose other outputs must be unused) is erased. Used to drop a node
/// while the name of its output survives (graph outputs and downstream references stay valid).
void take_over_output(ir::Graph& g, ir::Node& dead, ir::Value& gone, ir::Value& keep);
/// Replaces node n by initializers holding `outputs` (one per output slot; undefined tensors
/// for omitted outputs). Output names are kept.
void replace_with_constants(ir::Graph& g, ir::Node& n, std::vector<ir::Tensor> outputs);
/// Removes v when it is an initializer nothing uses any more (not a graph input or output).
/// Returns true when removed.
bool drop_if_unused(ir::Value* v);
/// Detaches the uses that nodes inside n's subgraphs make of outer values (call before erasing
/// a node that holds subgraphs, so no use list points into a destroyed graph).
void detach_subgraph_captures(const ir::Node& n);
/// A tensor made by a rewrite: plain bytes, no carried TensorProto fields from its source.
ir::Tensor fresh_tensor(ir::Tensor t);

}  // namespace mcc::transforms
