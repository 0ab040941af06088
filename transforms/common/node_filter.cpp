// The node filter of the stages' node options (see common/node_filter.h for the matching rule).
#include "transforms/common/node_filter.h"

#include "transforms/pipeline/pass_registry.h"

namespace mcc::transforms {

namespace {

std::string option_prefix(std::string_view stage, std::string_view option) {
  return std::string(stage) + ": " + std::string(option) + ": ";
}

}  // namespace

NodeMatcher::NodeMatcher(std::string pattern, std::string_view stage, std::string_view option, std::string_view item)
    : pattern_(std::move(pattern)) {
  try {
    re_ = std::regex(pattern_, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    const std::string where = item.empty() || item == pattern_ ? "" : "'" + std::string(item) + "': ";
    throw UsageError(option_prefix(stage, option) + where + "'" + pattern_ + "' is not a valid regex (" + e.what() +
                     ")");
  }
}

bool NodeMatcher::matches(const ir::Node& n) const {
  if (pattern_ == n.op_type) return true;
  auto exact = [&](const std::string& name) { return !name.empty() && name == pattern_; };
  auto regex = [&](const std::string& name) { return !name.empty() && std::regex_match(name, re_); };
  if (exact(n.name)) return true;
  for (const ir::Value* o : n.outputs)
    if (o && exact(o->name)) return true;
  if (regex(n.name)) return true;
  for (const ir::Value* o : n.outputs)
    if (o && regex(o->name)) return true;
  return false;
}

UsageError unmatched_item_error(std::string_view stage, std::string_view option, std::string_view item,
                                std::string_view scope, const std::string& hint) {
  return UsageError(option_prefix(stage, option) + "'" + std::string(item) + "' matches no " + std::string(scope) +
                    hint + "; " + kNodeMatchHelp);
}

std::string node_label(const ir::Node& n) {
  if (!n.name.empty()) return n.name;
  for (const ir::Value* o : n.outputs)
    if (o) return o->name;
  return n.op_type;
}

NodeFilter::NodeFilter(std::string stage, std::string option, const std::vector<std::string>& items)
    : stage_(std::move(stage)), option_(std::move(option)) {
  for (const auto& t : items) items_.push_back(FilterItem{t, NodeMatcher(t, stage_, option_), {}});
}

const FilterItem* NodeFilter::match(const ir::Node& n, const std::string& label) {
  const FilterItem* first = nullptr;
  for (FilterItem& x : items_)
    if (x.matcher.matches(n)) {
      x.matched.push_back(label);
      if (!first) first = &x;
    }
  return first;
}

const FilterItem* NodeFilter::find(const ir::Node& n) const {
  for (const FilterItem& x : items_)
    if (x.matcher.matches(n)) return &x;
  return nullptr;
}

void NodeFilter::require_all_matched(std::string_view scope, const std::vector<std::string>& candidates) const {
  for (const FilterItem& x : items_)
    if (x.matched.empty()) throw unmatched_item_error(stage_, option_, x.text, scope, did_you_mean(x.text, candidates));
}

std::pair<std::string, std::string> split_rule(const std::string& item, std::string_view stage,
                                               std::string_view option, std::string_view syntax) {
  const size_t colon = item.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
    throw UsageError(option_prefix(stage, option) + "'" + item + "' is not " + std::string(syntax));
  return {item.substr(0, colon), item.substr(colon + 1)};
}

}  // namespace mcc::transforms
