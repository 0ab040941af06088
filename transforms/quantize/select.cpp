// Node and tensor selection for the quantize stage (see quantize/select.h).
#include "transforms/quantize/select.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "ir/errors.h"
#include "transforms/pipeline/pass_registry.h"
#include "transforms/quantize/image_stem.h"

namespace mcc::transforms::quantize {

namespace {

const std::vector<std::string>& rule_actions() {
  static const std::vector<std::string> a{"skip",   "per_tensor", "per_channel", "uint8",      "int8",    "uint16",
                                          "int16",  "minmax",     "percentile",  "entropy",    "mse"};
  return a;
}

bool is_signed(ir::DType d) { return d == ir::DType::I8 || d == ir::DType::I16; }
int bits_of(ir::DType d) { return d == ir::DType::U16 || d == ir::DType::I16 ? 16 : 8; }
ir::DType make_type(int bits, bool sign) {
  if (bits == 16) return sign ? ir::DType::I16 : ir::DType::U16;
  return sign ? ir::DType::I8 : ir::DType::U8;
}
ir::DType widest(ir::DType a, ir::DType b) {
  return make_type(std::max(bits_of(a), bits_of(b)), is_signed(a) || is_signed(b));
}

/// Add or Mul with a one-element constant operand: a scalar affine step.
bool is_scalar_step(const ir::Node& n) {
  if (!n.is("Add") && !n.is("Mul")) return false;
  for (const ir::Value* in : n.inputs)
    if (in && in->initializer && in->initializer->numel() == 1) return true;
  return false;
}

bool is_dq_output(const ir::Value* v) {
  return v && v->producer && (v->producer->op_type == "DequantizeLinear" || v->producer->op_type == "QuantizeLinear");
}

struct UnionFind {
  std::map<std::string, std::string> parent;
  std::string find(const std::string& x) {
    auto it = parent.find(x);
    if (it == parent.end()) {
      parent[x] = x;
      return x;
    }
    if (it->second == x) return x;
    const std::string r = find(it->second);
    parent[x] = r;
    return r;
  }
  void unite(const std::string& a, const std::string& b) {
    const std::string ra = find(a), rb = find(b);
    if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);
  }
};

/// Drops, until none is left to drop, the candidates of `ops` none of whose outputs a remaining
/// candidate reads as a quantized activation: their integer kernels need both sides quantized.
void keep_ops_with_quantized_outputs(Selection& sel, const OpSet& ops) {
  if (ops.empty()) return;
  for (bool dropped = true; dropped;) {
    dropped = false;
    std::set<const ir::Value*> read;
    for (const Candidate& c : sel.nodes)
      for (int i : c.slots.activations) read.insert(c.node->input(static_cast<size_t>(i)));
    std::vector<Candidate> kept;
    for (Candidate& c : sel.nodes) {
      bool output_read = false;
      for (const ir::Value* o : c.node->outputs) output_read = output_read || read.count(o);
      if (ops.count(c.node->op_type) && !output_read) {
        dropped = true;
        const std::string why = "its output is not quantized (the target runs it in int8 only with both sides quantized)";
        sel.skipped.push_back({{"node", node_label(*c.node)}, {"op", c.node->op_type}, {"reason", why}});
        spdlog::debug("quantize: node '{}' ({}) stays float: {}", node_label(*c.node), c.node->op_type, why);
        continue;
      }
      kept.push_back(c);
    }
    sel.nodes = std::move(kept);
  }
}

}  // namespace

void RuleActions::apply(Settings& s) const {
  for (const auto& a : names) {
    if (a == "skip") s.skip = true;
    else if (a == "per_tensor") s.per_channel = false;
    else if (a == "per_channel") s.per_channel = true;
    else if (a == "uint8") s.activation = ir::DType::U8;
    else if (a == "int8") s.activation = ir::DType::I8;
    else if (a == "uint16") s.activation = ir::DType::U16;
    else if (a == "int16") s.activation = ir::DType::I16;
    else s.method = parse_calib_method(a);
  }
}

Rules parse_rules(const std::vector<std::string>& items) {
  std::vector<std::string> texts;  // one item may hold several rules separated by ';'
  for (const auto& item : items) {
    size_t p = 0;
    while (p <= item.size()) {
      const size_t e = item.find(';', p);
      std::string text = item.substr(p, e == std::string::npos ? std::string::npos : e - p);
      p = e == std::string::npos ? item.size() + 1 : e + 1;
      if (!text.empty()) texts.push_back(std::move(text));
    }
  }
  auto parse_actions = [](const std::string& acts, const std::string& text) {
    RuleActions r;
    size_t q = 0;
    while (q <= acts.size()) {
      const size_t plus = acts.find('+', q);
      const std::string a = acts.substr(q, plus == std::string::npos ? std::string::npos : plus - q);
      q = plus == std::string::npos ? acts.size() + 1 : plus + 1;
      if (std::find(rule_actions().begin(), rule_actions().end(), a) == rule_actions().end())
        throw UsageError("quantize: rules: '" + text + "': unknown action '" + a + "'" + did_you_mean(a, rule_actions()) +
                         "; actions: skip, per_tensor, per_channel, uint8, int8, uint16, int16, minmax, percentile, "
                         "entropy, mse");
      r.names.push_back(a);
    }
    return r;
  };
  return Rules("quantize", "rules", texts, "REGEX:ACTION (e.g. 'conv1.*:skip', 'head.*:per_tensor+int8')",
               parse_actions);
}

NodeFilter parse_excludes(const std::vector<std::string>& items) { return NodeFilter("quantize", "exclude", items); }

Selection select(ir::Model& model, const SelectConfig& cfg, NodeFilter& excludes, Rules& rules) {
  for (const auto& op : cfg.op_types)
    if (!supported_ops().count(op)) {
      std::vector<std::string> ops(supported_ops().begin(), supported_ops().end());
      std::string list;
      for (const auto& o : ops) list += (list.empty() ? "" : ", ") + o;
      throw UsageError("quantize: op_types: cannot quantize '" + op + "'" + did_you_mean(op, ops) + "; supported: " + list);
    }
  const std::set<std::string, std::less<>> op_types(cfg.op_types.begin(), cfg.op_types.end());
  ir::Graph& g = *model.graph;
  Selection sel;
  std::vector<std::string> all_names;
  for (ir::Node* n : g.nodes()) {
    all_names.push_back(node_label(*n));
    if (n->op_type == "QuantizeLinear" || n->op_type == "DequantizeLinear") sel.already_quantized = true;
  }
  const auto ruled = [&rules](const ir::Node& n) {
    return std::any_of(rules.begin(), rules.end(), [&n](const Rule& r) { return r.matcher.matches(n); });
  };
  const ImageStem stem = cfg.float_image_stem ? find_image_stem(g, ruled) : ImageStem{};
  for (ir::Node* n : g.nodes()) {
    const std::string label = node_label(*n);
    // Exclusions apply to every node (a name, output name, op type or regex).
    const FilterItem* ex = excludes.match(*n, label);
    if (!op_types.count(n->op_type)) continue;
    auto slots = slots_for(*n);
    if (!slots) continue;
    auto skip = [&](const std::string& why) {
      sel.skipped.push_back({{"node", label}, {"op", n->op_type}, {"reason", why}});
      spdlog::debug("quantize: node '{}' ({}) stays float: {}", label, n->op_type, why);
    };
    if (ex) {
      skip("excluded by '" + ex->text + "'");
      continue;
    }
    if (cfg.float_scalar_steps && is_scalar_step(*n)) {
      skip("a scalar affine step: it runs float between its input's DequantizeLinear and the next QuantizeLinear");
      continue;
    }
    if (stem.nodes.count(n)) {
      skip("the image stem: it runs float, and so does the layer reading its output (quantize/image_stem.h)");
      continue;
    }
    Settings s = cfg.defaults;
    if (const Rule* r = rules.match(*n, label)) r->action.apply(s);
    if (s.skip) {
      skip("rule");
      continue;
    }
    bool quantized_input = false;
    for (const ir::Value* in : n->inputs) quantized_input = quantized_input || is_dq_output(in);
    if (quantized_input) {
      skip("already quantized (an input comes from DequantizeLinear)");
      continue;
    }
    sel.nodes.push_back(Candidate{n, *slots, s});
  }
  keep_ops_with_quantized_outputs(sel, cfg.need_quantized_output);
  excludes.require_all_matched("node", all_names);
  rules.require_all_matched("quantized node", [&](const Rule& r) {
    for (ir::Node* n : g.nodes())
      if (r.matcher.matches(*n))
        return " (it matches '" + node_label(*n) + "' (" + n->op_type + "), which is " +
               (op_types.count(n->op_type) ? "excluded or taken by an earlier rule" : "not in op_types") + ")";
    std::vector<std::string> names;
    for (const auto& c : sel.nodes) names.push_back(node_label(*c.node));
    return did_you_mean(r.matcher.pattern(), names);
  });

  // Activations: merged settings over their consumers.
  std::map<std::string, size_t> index;
  for (const Candidate& c : sel.nodes) {
    for (int i : c.slots.activations) {
      const ir::Value* v = c.node->input(static_cast<size_t>(i));
      if (!v || v->initializer || is_dq_output(v)) continue;
      if (stem.values.count(v)) {
        spdlog::debug("quantize: '{}' stays float: the image stem writes it", v->name);
        continue;
      }
      if (v->producer && cfg.float_inputs_from.count(v->producer->op_type)) {
        spdlog::debug("quantize: '{}' (from {}) stays float: the target cannot take it quantized", v->name,
                      v->producer->op_type);
        continue;
      }
      auto [it, fresh] = index.emplace(v->name, sel.activations.size());
      if (fresh) {
        ActivationInfo a;
        a.name = v->name;
        a.settings = c.settings;
        sel.activations.push_back(std::move(a));
      }
      ActivationInfo& a = sel.activations[it->second];
      const std::string label = node_label(*c.node);
      if (std::find(a.consumers.begin(), a.consumers.end(), label) == a.consumers.end()) a.consumers.push_back(label);
      a.settings.activation = widest(a.settings.activation, c.settings.activation);
    }
  }
  // Shared-scale groups: the quantized inputs of ops that need equal scales, and with them the
  // outputs of ops that take their input's scale (the target's same_scale_output).
  UnionFind uf;
  for (const Candidate& c : sel.nodes) {
    const bool equal_inputs = equal_scale_ops().count(c.node->op_type) > 0;
    const ir::Value* out = c.node->outputs.empty() ? nullptr : c.node->outputs[0];
    const bool same_output = cfg.same_scale_output.count(c.node->op_type) && out && index.count(out->name);
    if (!equal_inputs && !same_output) continue;
    std::string first;
    for (int i : c.slots.activations) {
      const ir::Value* v = c.node->input(static_cast<size_t>(i));
      if (!v || !index.count(v->name)) continue;
      if (first.empty()) first = v->name, uf.find(first);
      else if (equal_inputs) uf.unite(first, v->name);
    }
    if (same_output && !first.empty()) uf.unite(first, out->name);
  }
  std::map<std::string, int> root_group;
  for (auto& a : sel.activations) {
    if (!uf.parent.count(a.name)) continue;
    const std::string root = uf.find(a.name);
    auto [it, fresh] = root_group.emplace(root, static_cast<int>(sel.groups.size()));
    if (fresh) sel.groups.emplace_back();
    a.group = it->second;
    sel.groups[static_cast<size_t>(a.group)].push_back(a.name);
  }
  // A group quantizes with one dtype: the widest its members need.
  for (size_t gi = 0; gi < sel.groups.size(); ++gi) {
    ir::DType t = ir::DType::U8;
    bool first = true;
    for (const auto& a : sel.activations)
      if (a.group == static_cast<int>(gi)) {
        t = first ? a.settings.activation : widest(t, a.settings.activation);
        first = false;
      }
    for (auto& a : sel.activations)
      if (a.group == static_cast<int>(gi)) a.settings.activation = t;
  }
  // Singleton groups (a Concat with one quantized input) are not groups.
  std::vector<std::vector<std::string>> kept;
  std::map<int, int> renum;
  for (size_t gi = 0; gi < sel.groups.size(); ++gi)
    if (sel.groups[gi].size() > 1) {
      renum[static_cast<int>(gi)] = static_cast<int>(kept.size());
      kept.push_back(sel.groups[gi]);
    }
  for (auto& a : sel.activations) a.group = renum.count(a.group) ? renum[a.group] : -1;
  sel.groups = kept;
  return sel;
}

}  // namespace mcc::transforms::quantize
