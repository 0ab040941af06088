// prune (mode=channel): removes whole output channels, ranked by weight norm, and shrinks every
// tensor that depends on them, so the model is physically smaller and faster.
//
// Before:  a = Conv(x, W1[64,32,3,3], B1[64]); b = BN(a, s,b,m,v [64]); r = Relu(b);
//          y = Conv(r, W2[128,64,1,1])
// After:   a = Conv(x, W1[K,32,3,3], B1[K]);   b = BN(a, [K] each);        r = Relu(b);
//          y = Conv(r, W2[128,K,1,1])          K = 64 - floor(s * 64), the K most important kept
//
// Importance of channel c of a group (channel_groups.cpp: producers joined at Add/Concat, plus
// tied depthwise convs):
//   imp[c] = sum_p n_p[c] / mean_c(n_p[c]),  n_p[c] = ||W_p[c]||_1 (criterion=l1) or ||W_p[c]||_2
// over the group's layers p (each normalised by its own mean, so no layer dominates by scale).
// scope=layer: each group drops floor(s_g * C_g) channels, s_g = sparsity or the first override
// rule matching one of its producers. scope=global: the floor(s * sum C) least important channels
// over all groups without an override, ranked by imp[c] / mean(imp). Both keep at least
// min_channels per group; with round_to=N the kept count is rounded up to a multiple of N (the
// most important dropped channels come back), which blocked kernels (NCHWc) run faster. Ties are
// broken by (group, channel index).
// A group is pruned only when every producer is selected by include/exclude; blocked groups
// (graph outputs, ops that cannot be followed, ...) are left alone and listed with the reason.
// Weights are sliced in their own dtype (bytes copied, no arithmetic); a weight used by several
// nodes gets a fresh initializer per cut site (name + "_pruned"), a weight used once keeps its
// name. Shapes of every touched value are updated where known (value_info, intermediate shapes).
// Numerics: when the removed channels' activations are zero the model's outputs are unchanged
// exactly; otherwise the removal is an approximation (fine-tune, or re-check with `mcc eval`).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <set>

#include <spdlog/spdlog.h>

#include "ir/errors.h"
#include "ir/weight_layout.h"
#include "transforms/prune/prune.h"

namespace mcc::transforms::prune {

namespace {

using Kept = std::map<int, std::vector<int64_t>>;  // group id -> kept channel indices (pruned groups)

std::vector<double> to_doubles(const ir::Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  ir::dispatch<ir::DType::F32, ir::DType::F64, ir::DType::F16, ir::DType::BF16>(t.dtype(), "prune", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto d = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, double>) out[i] = d[i];
      else out[i] = static_cast<double>(static_cast<float>(d[i]));
    }
  });
  return out;
}

/// Norm of every slice of `t` along `axis`.
std::vector<double> channel_norms(const ir::Tensor& t, int axis, bool l2) {
  const auto& d = t.dims();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= d[i];
  for (size_t i = axis + 1; i < d.size(); ++i) inner *= d[i];
  const int64_t c = d[axis];
  const auto v = to_doubles(t);
  std::vector<double> n(static_cast<size_t>(c), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < inner; ++i) {
        const double x = v[static_cast<size_t>((o * c + k) * inner + i)];
        n[k] += l2 ? x * x : std::fabs(x);
      }
  if (l2)
    for (auto& x : n) x = std::sqrt(x);
  return n;
}

/// Adds norms / mean(norms) into imp[offset ...].
void add_normalized(std::vector<double>& imp, const std::vector<double>& norms, size_t offset) {
  double mean = 0;
  for (double x : norms) mean += x;
  mean /= std::max<size_t>(1, norms.size());
  for (size_t i = 0; i < norms.size(); ++i) imp[offset + i] += mean > 0 ? norms[i] / mean : 0.0;
}

ir::Tensor slice(const ir::Tensor& t, int axis, const std::vector<int64_t>& idx) {
  auto dims = t.dims();
  const size_t es = ir::dtype_size(t.dtype());
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t c = dims[axis];
  dims[axis] = static_cast<int64_t>(idx.size());
  ir::Tensor out = ir::Tensor::allocate(t.dtype(), dims);
  const std::byte* src = t.raw();
  std::byte* dst = out.mutable_raw();
  const size_t row = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < idx.size(); ++k)
      std::memcpy(dst + (o * static_cast<int64_t>(idx.size()) + static_cast<int64_t>(k)) * row,
                  src + (o * c + idx[k]) * row, row);
  out.name = t.name;
  out.doc_string = t.doc_string;
  return out;
}

std::vector<int64_t> site_indices(const std::vector<Segment>& segs, const Kept& kept, bool& changed) {
  std::vector<int64_t> idx;
  int64_t off = 0;
  changed = false;
  for (const auto& s : segs) {
    auto it = s.group >= 0 ? kept.find(s.group) : kept.end();
    if (it == kept.end()) {
      for (int64_t i = 0; i < s.size; ++i) idx.push_back(off + i);
    } else {
      for (int64_t k : it->second) idx.push_back(off + k);
      changed = true;
    }
    off += s.size;
  }
  return idx;
}

int64_t total_params(const ir::Graph& g) {
  int64_t n = 0;
  for (const ir::Value* v : g.initializers)  // used ones (an unused graph-input initializer stays behind)
    n += v->initializer && !v->uses.empty() ? v->initializer->numel() : 0;
  return n;
}

nlohmann::ordered_json dims_json(const std::vector<int64_t>& d) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (int64_t x : d) a.push_back(x);
  return a;
}

std::vector<std::string> names_of(const std::vector<ir::Node*>& nodes) {
  std::vector<std::string> out;
  for (const ir::Node* n : nodes) out.push_back(node_key(*n));
  return out;
}

/// Rewrites the model for `kept`; returns the list of changed tensors.
nlohmann::ordered_json apply(ir::Graph& g, const ChannelAnalysis& a, const Kept& kept) {
  struct Op { int axis; std::vector<int64_t> idx; bool reshape; int64_t new_total; };
  std::map<std::pair<size_t, int>, std::vector<Op>> ops;  // (site order of node, input) -> cuts
  std::vector<std::pair<ir::Node*, int>> keys;
  std::map<std::pair<const ir::Node*, int>, size_t> key_index;
  for (const SliceSite& s : a.sites) {
    bool changed = false;
    auto idx = site_indices(s.segments, kept, changed);
    if (!changed) continue;
    auto k = std::make_pair(static_cast<const ir::Node*>(s.node), s.input);
    if (!key_index.count(k)) {
      key_index.emplace(k, keys.size());
      keys.emplace_back(s.node, s.input);
    }
    const int64_t total = static_cast<int64_t>(idx.size());
    ops[{key_index.at(k), s.input}].push_back({s.axis, std::move(idx), s.reshape_shape, total});
  }
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (size_t ki = 0; ki < keys.size(); ++ki) {
    auto [node, input] = keys[ki];
    ir::Value* old = node->inputs[input];
    ir::Tensor t = *old->initializer;
    for (const Op& op : ops.at({ki, input})) {
      if (op.reshape) {
        t = t.clone();
        t.mutable_data<int64_t>()[op.axis] = op.new_total;
      } else {
        t = slice(t, op.axis, op.idx);
      }
    }
    t.external.reset();
    nlohmann::ordered_json e;
    e["value"] = old->name;
    e["node"] = node_key(*node);
    e["shape_before"] = dims_json(old->initializer->dims());
    e["shape_after"] = dims_json(t.dims());
    const bool in_place = old->uses.size() == 1 && !old->is_graph_input &&
                          std::find(g.outputs.begin(), g.outputs.end(), old) == g.outputs.end();
    if (in_place) {
      old->initializer = std::move(t);
      if (old->shape.rank_known()) old->shape = ir::Shape::of(old->initializer->dims());
    } else {
      const std::string name = g.unique_name(old->name + "_pruned");
      t.name = name;
      ir::Value& nv = g.add_initializer(name, std::move(t));
      g.set_input(*node, static_cast<size_t>(input), &nv);
      e["value"] = name;
      e["from"] = old->name;
      if (old->uses.empty() && !old->is_graph_input &&
          std::find(g.outputs.begin(), g.outputs.end(), old) == g.outputs.end())
        g.remove_value(*old);
    }
    tensors.push_back(std::move(e));
  }
  for (const auto& [n, segs] : a.group_attrs) {
    bool changed = false;
    const auto idx = site_indices(segs, kept, changed);
    if (changed) n->set_attr({"group", ir::AttrKind::Int, static_cast<int64_t>(idx.size()), "", "", ""});
  }
  for (const auto& tv : a.values) {
    bool changed = false;
    const auto idx = site_indices(tv.segments, kept, changed);
    if (!changed || !tv.value->shape.dims) continue;
    auto& dims = *tv.value->shape.dims;
    const int i = static_cast<int>(dims.size()) + tv.neg_axis;
    if (i >= 0 && dims[i].value) dims[i] = ir::Dim::of(static_cast<int64_t>(idx.size()));
  }
  return tensors;
}

nlohmann::ordered_json record_group(const Group& grp, const Kept& kept, const std::string& skipped) {
  nlohmann::ordered_json e;
  e["producers"] = names_of(grp.producers);
  if (!grp.depthwise.empty()) e["depthwise"] = names_of(grp.depthwise);
  e["channels"] = grp.channels;
  if (grp.blocked) {
    e["blocked"] = grp.reason;
  } else if (auto it = kept.find(grp.id); it != kept.end()) {
    e["removed"] = grp.channels - static_cast<int64_t>(it->second.size());
    e["kept"] = it->second;
  } else {
    e["removed"] = 0;
    if (!skipped.empty()) e["skipped"] = skipped;
  }
  return e;
}

void finish(ir::Graph& g, const ChannelAnalysis& a, const Kept& kept, int64_t params_before,
            nlohmann::ordered_json& stats, nlohmann::ordered_json& rec, const std::vector<std::string>& skipped) {
  int64_t blocked = 0, channels = 0, removed = 0;
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const Group& grp : a.groups) {
    blocked += grp.blocked;
    channels += grp.channels;
    if (auto it = kept.find(grp.id); it != kept.end()) removed += grp.channels - static_cast<int64_t>(it->second.size());
    if (grp.blocked)
      spdlog::debug("prune: channels of {} left alone: {}", node_key(*grp.producers.front()), grp.reason);
    groups.push_back(record_group(grp, kept, skipped[static_cast<size_t>(grp.id)]));
  }
  rec["tensors"] = apply(g, a, kept);
  rec["groups"] = std::move(groups);
  stats["groups"] = static_cast<int64_t>(a.groups.size());
  stats["groups_pruned"] = static_cast<int64_t>(kept.size());
  stats["groups_blocked"] = blocked;
  stats["channels"] = channels;
  stats["channels_removed"] = removed;
  stats["params_before"] = params_before;
  stats["params_after"] = total_params(g);
}

}  // namespace

nlohmann::ordered_json prune_channels(ir::Model& m, const StructuredConfig& cfg, nlohmann::ordered_json& stats) {
  ir::Graph& g = *m.graph;
  const int64_t params_before = total_params(g);
  ChannelAnalysis a = analyze_channels(g);
  const size_t ng = a.groups.size();
  std::vector<std::vector<double>> imp(ng);
  std::vector<std::optional<double>> target(ng);
  std::vector<std::string> skipped(ng);
  for (Group& grp : a.groups) {
    if (grp.blocked) continue;
    bool all = true;
    std::optional<double> ov;
    for (ir::Node* p : grp.producers) {
      if (!cfg.selector->selected(*p)) all = false;
      else if (!ov) ov = cfg.selector->override_for(*p);
    }
    if (!all) {
      skipped[grp.id] = "a producer is excluded";
      continue;
    }
    target[grp.id] = ov ? *ov : cfg.sparsity;
    if (ov) skipped[grp.id] = "override";
    auto& v = imp[grp.id];
    v.assign(static_cast<size_t>(grp.channels), 0.0);
    for (ir::Node* p : grp.producers) {  // producers have a weight layout (channel_groups.cpp)
      const ir::Tensor& w = *p->input(1)->initializer;
      add_normalized(v, channel_norms(w, ir::weight_layout(*p, w.dims())->out_axis, cfg.l2), 0);
    }
  }
  for (const auto& [n, segs] : a.group_attrs) {  // tied depthwise convs add their own norms
    const auto norms = channel_norms(*n->input(1)->initializer, 0, cfg.l2);
    size_t off = 0;
    for (const auto& s : segs) {
      if (s.group >= 0 && !imp[s.group].empty())
        add_normalized(imp[s.group], std::vector<double>(norms.begin() + off, norms.begin() + off + s.size), 0);
      off += static_cast<size_t>(s.size);
    }
  }

  std::vector<std::vector<bool>> drop(ng);
  auto choose = [&](int gid, int64_t n) {
    const auto& v = imp[gid];
    std::vector<int64_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return v[x] < v[y]; });
    drop[gid].assign(v.size(), false);
    for (int64_t i = 0; i < n; ++i) drop[gid][order[i]] = true;
  };
  struct Cand { double imp; int group; int64_t channel; };
  std::vector<Cand> pool;
  for (const Group& grp : a.groups) {
    if (!target[grp.id]) continue;
    const int64_t room = std::max<int64_t>(0, grp.channels - cfg.min_channels);
    if (!cfg.global || skipped[grp.id] == "override") {
      choose(grp.id, std::min(room, static_cast<int64_t>(std::floor(*target[grp.id] * grp.channels))));
      continue;
    }
    const auto& v = imp[grp.id];
    double mean = std::accumulate(v.begin(), v.end(), 0.0) / std::max<size_t>(1, v.size());
    for (int64_t c = 0; c < grp.channels; ++c) pool.push_back({mean > 0 ? v[c] / mean : 0.0, grp.id, c});
  }
  if (cfg.global && !pool.empty()) {
    std::sort(pool.begin(), pool.end(), [](const Cand& x, const Cand& y) {
      if (x.imp != y.imp) return x.imp < y.imp;
      if (x.group != y.group) return x.group < y.group;
      return x.channel < y.channel;
    });
    int64_t budget = static_cast<int64_t>(std::floor(cfg.sparsity * static_cast<double>(pool.size())));
    std::vector<int64_t> left(ng, 0);
    for (const Group& grp : a.groups) left[grp.id] = grp.channels;
    for (const Cand& c : pool) {
      if (budget == 0) break;
      if (left[c.group] <= cfg.min_channels) continue;
      if (drop[c.group].empty()) drop[c.group].assign(static_cast<size_t>(a.groups[c.group].channels), false);
      drop[c.group][c.channel] = true;
      --left[c.group];
      --budget;
    }
  }
  if (cfg.round_to > 1) {  // keep a multiple of round_to channels: give back the most important dropped
    for (const Group& grp : a.groups) {
      auto& d = drop[grp.id];
      if (d.empty()) continue;
      const int64_t keep = std::count(d.begin(), d.end(), false);
      int64_t give = std::min(grp.channels, (keep + cfg.round_to - 1) / cfg.round_to * cfg.round_to) - keep;
      std::vector<int64_t> order;
      for (int64_t c = 0; c < grp.channels; ++c)
        if (d[c]) order.push_back(c);
      const auto& v = imp[grp.id];
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return v[x] > v[y]; });
      for (size_t i = 0; i < order.size() && give > 0; ++i, --give) d[order[i]] = false;
    }
  }
  Kept kept;
  for (const Group& grp : a.groups) {
    if (drop[grp.id].empty() || std::none_of(drop[grp.id].begin(), drop[grp.id].end(), [](bool b) { return b; }))
      continue;
    auto& k = kept[grp.id];
    for (int64_t c = 0; c < grp.channels; ++c)
      if (!drop[grp.id][c]) k.push_back(c);
  }
  nlohmann::ordered_json rec;
  rec["criterion"] = cfg.l2 ? "l2" : "l1";
  finish(g, a, kept, params_before, stats, rec, skipped);
  return rec;
}

void replay_channels(ir::Model& m, const nlohmann::ordered_json& record, nlohmann::ordered_json& stats) {
  ir::Graph& g = *m.graph;
  const int64_t params_before = total_params(g);
  ChannelAnalysis a = analyze_channels(g);
  std::map<std::vector<std::string>, const Group*> by_producers;
  for (const Group& grp : a.groups) by_producers.emplace(names_of(grp.producers), &grp);
  Kept kept;
  try {
    if (!record.contains("groups") || !record["groups"].is_array()) throw ModelError("no 'groups' list");
    for (const auto& e : record["groups"]) {
      if (!e.contains("kept")) continue;
      const auto producers = e.at("producers").get<std::vector<std::string>>();
      auto it = by_producers.find(producers);
      const std::string what = "the channel group of '" + (producers.empty() ? std::string("?") : producers.front()) + "'";
      if (it == by_producers.end()) throw ModelError(what + " is not in the model (its layers are not joined the same way)");
      const Group& grp = *it->second;
      if (grp.blocked) throw ModelError(what + " cannot be pruned in this model: " + grp.reason);
      if (e.at("channels").get<int64_t>() != grp.channels)
        throw ModelError(what + " has " + std::to_string(grp.channels) + " channels, the record " +
                         std::to_string(e.at("channels").get<int64_t>()));
      auto k = e.at("kept").get<std::vector<int64_t>>();
      if (k.empty() || !std::is_sorted(k.begin(), k.end()) || std::adjacent_find(k.begin(), k.end()) != k.end() ||
          k.front() < 0 || k.back() >= grp.channels)
        throw ModelError(what + ": kept channel indices must be sorted, unique and below " + std::to_string(grp.channels));
      if (static_cast<int64_t>(k.size()) < grp.channels && !kept.emplace(grp.id, std::move(k)).second)
        throw ModelError(what + " recorded twice");
    }
  } catch (const ModelError& ex) {
    throw ModelError("prune: the state's record does not fit the model: " + ex.message());
  } catch (const nlohmann::json::exception& ex) {
    throw ModelError(std::string("prune: the state's record is invalid: ") + ex.what());
  }
  nlohmann::ordered_json rec;
  finish(g, a, kept, params_before, stats, rec, std::vector<std::string>(a.groups.size()));
}

}  // namespace mcc::transforms::prune
