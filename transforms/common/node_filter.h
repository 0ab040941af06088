// The node filter every stage uses for its node options (fp16 exclude=, quantize exclude= and
// rules=, prune include=, exclude= and overrides=): one matching rule, one error for a bad regex,
// one error for an item that matches nothing, and per item the labels of the nodes it matched
// (the stages write these into their records).
//
// The matching rule: an item matches a node when
//   1. it equals the node's name, one of its output names or its op type (exact, case-sensitive);
//   2. otherwise, read as an ECMAScript regex, it matches the whole node name or the whole of one
//      of its output names (std::regex_match: "conv1" does not match "conv10", "conv1.*" does).
// Empty names never match. The op type is compared exactly only, never as a regex. Every item
// must be a valid regex, also one meant as a plain name (a bad regex is a UsageError, exit 2),
// so an item means the same thing whatever nodes the model has.
//
// Two forms: a NodeFilter (include/exclude lists) tries every item on each node it is offered
// and records the node on each item that matches; NodeRules<Action> (ordered REGEX:PAYLOAD
// rules) records the node on the first rule that matches only (first match wins) and hands the
// stage that rule's payload, which the stage parses.
//
// Does not apply to: which nodes a stage offers (its own candidates: prunable layers, quantizable
// nodes, float32 nodes) and how it records matches (lists of labels, counts); both stay with the
// stage. Nothing here walks a graph or its subgraphs.
#pragma once
#include <functional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "ir/errors.h"
#include "ir/graph.h"

namespace mcc::transforms {

/// One-line help on the matching rule, appended to every "matches nothing" error.
inline constexpr const char* kNodeMatchHelp =
    "items match a node name, output name or op type exactly, or as a regex the whole node or output name";

/// The pattern part of an item, compiled once.
class NodeMatcher {
 public:
  NodeMatcher() = default;
  /// Compiles `pattern`; throws UsageError "<stage>: <option>: '<item>' is not a valid regex
  /// (why)" naming the whole item as the user wrote it (`item`, when it holds more than the
  /// pattern, e.g. a rule's payload; empty: the pattern is the item).
  NodeMatcher(std::string pattern, std::string_view stage, std::string_view option, std::string_view item = {});
  const std::string& pattern() const { return pattern_; }
  /// The matching rule above.
  bool matches(const ir::Node& n) const;

 private:
  std::string pattern_;
  std::regex re_;
};

/// One item of a filter option and the labels of the nodes it matched, in the order offered.
struct FilterItem {
  std::string text;  // as written
  NodeMatcher matcher;
  std::vector<std::string> matched;
};

/// The UsageError for an item of `option` that matched no node among the stage's candidates
/// (`scope`, e.g. "prunable layer"); `hint` (" (did you mean 'x'?)", or a why) goes after it.
UsageError unmatched_item_error(std::string_view stage, std::string_view option, std::string_view item,
                                std::string_view scope, const std::string& hint);

/// The label nodes are recorded under: the name, or the first output's name for an unnamed node,
/// or the op type when it has neither.
std::string node_label(const ir::Node& n);

/// An include or exclude list: every item is tried on every node offered.
class NodeFilter {
 public:
  NodeFilter() = default;
  /// Compiles each item (UsageError for a bad regex, naming stage, option and item).
  NodeFilter(std::string stage, std::string option, const std::vector<std::string>& items);

  /// Records `label` on every item that matches `n`; returns the first of them, or nullptr.
  const FilterItem* match(const ir::Node& n, const std::string& label);
  /// The first item that matches `n`, or nullptr; records nothing.
  const FilterItem* find(const ir::Node& n) const;
  /// Throws unmatched_item_error for the first item that matched nothing, with a did-you-mean
  /// hint from `candidates`.
  void require_all_matched(std::string_view scope, const std::vector<std::string>& candidates) const;

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  std::vector<FilterItem>::const_iterator begin() const { return items_.begin(); }
  std::vector<FilterItem>::const_iterator end() const { return items_.end(); }
  const std::string& stage() const { return stage_; }
  const std::string& option() const { return option_; }

 private:
  std::string stage_, option_;
  std::vector<FilterItem> items_;
};

/// One ordered rule: an item "PATTERN:PAYLOAD" (split at the last ':'), its parsed payload and
/// the labels of the nodes it decided.
template <class Action>
struct NodeRule {
  std::string text;  // as written, pattern and payload
  NodeMatcher matcher;
  Action action;
  std::vector<std::string> matched;
};

/// Splits "PATTERN:PAYLOAD" at the last ':'; throws UsageError "<stage>: <option>: '<item>' is
/// not <syntax>" when either part is empty.
std::pair<std::string, std::string> split_rule(const std::string& item, std::string_view stage,
                                               std::string_view option, std::string_view syntax);

/// Ordered rules, first match wins.
template <class Action>
class NodeRules {
 public:
  using Rule = NodeRule<Action>;
  /// Parses a payload (the text after the last ':') given the whole item; throws UsageError.
  using ParsePayload = std::function<Action(const std::string& payload, const std::string& item)>;

  NodeRules() = default;
  /// `syntax` describes the item form for the error, e.g. "REGEX:SPARSITY (e.g. 'conv1.*:0.3')".
  NodeRules(std::string stage, std::string option, const std::vector<std::string>& items, std::string_view syntax,
            const ParsePayload& parse)
      : stage_(std::move(stage)), option_(std::move(option)) {
    for (const auto& item : items) {
      auto [pattern, payload] = split_rule(item, stage_, option_, syntax);
      Rule r{item, NodeMatcher(pattern, stage_, option_, item), parse(payload, item), {}};
      rules_.push_back(std::move(r));
    }
  }

  /// The first rule that matches `n`, with `label` recorded on it; nullptr when none does.
  const Rule* match(const ir::Node& n, const std::string& label) {
    for (Rule& r : rules_)
      if (r.matcher.matches(n)) {
        r.matched.push_back(label);
        return &r;
      }
    return nullptr;
  }
  /// The first rule that matched nothing, or nullptr.
  const Rule* first_unmatched() const {
    for (const Rule& r : rules_)
      if (r.matched.empty()) return &r;
    return nullptr;
  }
  /// Throws unmatched_item_error for the first rule that matched nothing; the hint is `hint(rule)`.
  void require_all_matched(std::string_view scope, const std::function<std::string(const Rule&)>& hint) const {
    if (const Rule* r = first_unmatched()) throw unmatched_item_error(stage_, option_, r->text, scope, hint(*r));
  }

  bool empty() const { return rules_.empty(); }
  size_t size() const { return rules_.size(); }
  typename std::vector<Rule>::const_iterator begin() const { return rules_.begin(); }
  typename std::vector<Rule>::const_iterator end() const { return rules_.end(); }
  const std::string& stage() const { return stage_; }
  const std::string& option() const { return option_; }

 private:
  std::string stage_, option_;
  std::vector<Rule> rules_;
};

}  // namespace mcc::transforms
