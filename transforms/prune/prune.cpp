// prune: magnitude pruning of Conv/ConvTranspose/Gemm/MatMul weights, either individual weights
// (mode=unstructured, prune/unstructured.cpp) or whole output channels that are physically
// removed with every tensor that depends on them (mode=channel, channel_groups.cpp and
// prune/structured.cpp).
//
// Before:  Y = Gemm(Relu(Conv(X, W[64,..], B[64])), F[10,64])
// After (unstructured, sparsity=0.5):  W, F keep their shapes, half of each set to 0
// After (channel, sparsity=0.25):      W[48,..], B[48], F[10,48]: 16 channels gone
//
// Layer selection: include= and exclude= items match layers by the node filter's rule (a node
// name, output name or op type exactly, or an ECMAScript regex over the whole node or output
// name; common/node_filter.h); overrides= is an ordered list of REGEX:SPARSITY rules, the first
// match wins (Distiller). A rule that matches no prunable layer is a usage error (exit 2), and
// the record lists what each rule matched (by node name, or first output name when unnamed).
// sparsity must lie in [0, 1).
// State: the record holds, per weight, the sparsity reached and the mask (run-length or bitset,
// base64; prune/mask_codec.cpp), or, per channel group, the kept channel indices. With a record
// to replay the stage applies it as it is, without ranking anything, so the model comes out
// byte-identical; a record that does not fit the model is a ModelError (exit 3).
// Does not apply when: no layer has an initializer weight of a float dtype (e.g. after quantize,
// whose weights sit behind DequantizeLinear: prune before quantize). Only the main graph is
// pruned. Channel mode works with BatchNormalization present or folded.
#include "transforms/prune/prune.h"

#include <spdlog/spdlog.h>

#include <charconv>

#include "ir/errors.h"
#include "transforms/pipeline/pass_registry.h"

namespace mcc::transforms::prune {


std::string node_key(const ir::Node& n) {
  if (!n.name.empty()) return n.name;
  for (const ir::Value* v : n.outputs)
    if (v) return v->name;
  return "";
}

Selector::Selector(const std::vector<std::string>& include_items, const std::vector<std::string>& exclude_items,
                   const std::vector<std::string>& override_items)
    : include("prune", "include", include_items),
      exclude("prune", "exclude", exclude_items),
      overrides("prune", "overrides", override_items, "REGEX:SPARSITY (e.g. 'conv1.*:0.3')",
                [](const std::string& num, const std::string& item) {
                  double s = -1;
                  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), s);
                  if (ec != std::errc() || p != num.data() + num.size() || !(s >= 0.0 && s < 1.0))
                    throw UsageError("prune: overrides: '" + item + "': sparsity must be a number in [0, 1)");
                  return s;
                }) {}

bool Selector::selected(const ir::Node& n) {
  const std::string key = node_key(n);
  if (!include.empty() && !include.match(n, key)) return false;
  return !exclude.match(n, key);
}

std::optional<double> Selector::override_for(const ir::Node& n) {
  if (const auto* r = overrides.match(n, node_key(n))) return r->action;
  return std::nullopt;
}

void Selector::require_all_matched(const std::vector<std::string>& all_names) const {
  include.require_all_matched("prunable layer", all_names);
  exclude.require_all_matched("prunable layer", all_names);
  overrides.require_all_matched("prunable layer", [&](const NodeRule<double>& r) {
    return did_you_mean(r.matcher.pattern(), all_names);
  });
}

namespace {

template <class Items>
nlohmann::ordered_json rules_json(const Items& rules) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& r : rules) out.push_back({{"rule", r.text}, {"matched", r.matched}});
  return out;
}

class PrunePass : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo kInfo{
        "prune",
        "Magnitude pruning: zero weights (unstructured) or remove whole output channels (channel)",
        {
            {"mode", OptionType::String, "unstructured", "Prune single weights, or whole output channels",
             {"unstructured", "channel"}},
            {"sparsity", OptionType::Float, "0.5", "Fraction of weights (or channels) to remove, in [0, 1)", {}},
            {"scope", OptionType::String, "layer", "Sparsity per layer, or one ranking across all layers",
             {"layer", "global"}},
            {"criterion", OptionType::String, "l1", "Channel importance (mode=channel): L1 or L2 norm of its weights",
             {"l1", "l2"}},
            {"include", OptionType::StringList, "", "Layers pruned: names, output names, op types or regexes (empty = all)", {}},
            {"exclude", OptionType::StringList, "", "Layers left alone: names, output names, op types or regexes", {}},
            {"overrides", OptionType::StringList, "",
             "Ordered REGEX:SPARSITY rules, the first match wins (e.g. 'conv1:0,fc.*:0.8')", {}},
            {"min_channels", OptionType::Int, "1", "Channels kept at least per group (mode=channel)", {}},
            {"round_to", OptionType::Int, "1",
             "Kept channels per group rounded up to a multiple of this (mode=channel; 8 or 16 suit SIMD kernels)", {}},
        },
        {{"quantize", "pruning reads float weights, which quantize has turned into int8 behind DequantizeLinear"}}};
    return kInfo;
  }

  PassResult run(ir::Model& model, PassContext& ctx) override {
    const auto& o = ctx.options;
    const bool channel = o.get_string("mode") == "channel";
    const double sparsity = o.get_float("sparsity");
    if (!(sparsity >= 0.0 && sparsity < 1.0))
      throw UsageError("prune: sparsity=" + o.get_string("sparsity") + " is out of range; use a value in [0, 1)");
    const int64_t min_channels = o.get_int("min_channels");
    if (min_channels < 1) throw UsageError("prune: min_channels must be at least 1");
    const int64_t round_to = o.get_int("round_to");
    if (round_to < 1) throw UsageError("prune: round_to must be at least 1");
    Selector sel(o.get_list("include"), o.get_list("exclude"), o.get_list("overrides"));

    PassResult res;
    const bool replay = ctx.replay && !ctx.replay->empty();
    if (replay) {
      const auto& rec = *ctx.replay;
      const std::string mode = rec.value("mode", std::string());
      if (mode != o.get_string("mode"))
        throw ModelError("prune: the state's record is for mode '" + mode + "', the stage runs mode '" +
                         o.get_string("mode") + "'");
      if (channel) replay_channels(model, rec, res.stats);
      else replay_unstructured(model, rec, res.stats);
      res.record = rec;
    } else {
      // What each rule matches among all prunable layers, checked before anything changes.
      Selector probe = sel;
      std::vector<std::string> names;
      for (const ir::Node* n : model.graph->nodes())
        if (prunable_weight(*n)) {
          names.push_back(node_key(*n));
          probe.selected(*n);
          probe.override_for(*n);
        }
      probe.require_all_matched(names);
      res.record["mode"] = o.get_string("mode");
      if (channel) {
        StructuredConfig cfg;
        cfg.sparsity = sparsity;
        cfg.global = o.get_string("scope") == "global";
        cfg.l2 = o.get_string("criterion") == "l2";
        cfg.min_channels = min_channels;
        cfg.round_to = round_to;
        cfg.selector = &sel;
        auto r = prune_channels(model, cfg, res.stats);
        for (auto& [k, v] : r.items()) res.record[k] = v;
      } else {
        UnstructuredConfig cfg;
        cfg.sparsity = sparsity;
        cfg.global = o.get_string("scope") == "global";
        cfg.selector = &sel;
        res.record["tensors"] = prune_unstructured(model, cfg, res.stats);
      }
      res.record["include"] = rules_json(probe.include);
      res.record["exclude"] = rules_json(probe.exclude);
      res.record["overrides"] = rules_json(probe.overrides);
    }
    if (channel) {
      res.modified = res.stats.value("channels_removed", int64_t{0}) > 0;
      spdlog::info("prune: {} of {} channels removed in {} groups ({} left alone); parameters {} -> {}",
                   res.stats.value("channels_removed", int64_t{0}), res.stats.value("channels", int64_t{0}),
                   res.stats.value("groups_pruned", int64_t{0}), res.stats.value("groups_blocked", int64_t{0}),
                   res.stats.value("params_before", int64_t{0}), res.stats.value("params_after", int64_t{0}));
    } else {
      res.modified = res.stats.value("weights_zeroed", int64_t{0}) > 0;
      spdlog::info("prune: {} weights zeroed in {} layers; sparsity of the prunable weights {:.4f}",
                   res.stats.value("weights_zeroed", int64_t{0}), res.stats.value("layers_pruned", int64_t{0}),
                   res.stats.value("sparsity", 0.0));
    }
    return res;
  }
};

}  // namespace

std::unique_ptr<Pass> make_pass() { return std::make_unique<PrunePass>(); }

}  // namespace mcc::transforms::prune
