// Point building for the quantize stage (see quantize/points.h).
#include "transforms/quantize/points.h"

#include <algorithm>
#include <set>

#include "transforms/quantize/bias.h"

namespace mcc::transforms::quantize {

namespace {

/// Float32 absolute maximum per channel along axis (axis -1: one channel).
void channel_ranges(const ir::Tensor& w, int axis, std::vector<double>& lo, std::vector<double>& hi) {
  const auto x = w.data<float>();
  int64_t inner = 1, channels = 1;
  if (axis >= 0) {
    channels = w.dims()[static_cast<size_t>(axis)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < w.rank(); ++d) inner *= w.dims()[d];
  }
  lo.assign(static_cast<size_t>(channels), 0.0);
  hi.assign(static_cast<size_t>(channels), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = axis < 0 ? 0 : static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels);
    lo[c] = std::min(lo[c], static_cast<double>(x[i]));
    hi[c] = std::max(hi[c], static_cast<double>(x[i]));
  }
}

void add_activation_points(const Selection& sel, const Config& cfg, const std::vector<bool>& use,
                           const std::vector<std::pair<double, double>>& rng, Points& pts) {
  std::vector<std::pair<double, double>> group_range(sel.groups.size(), {0.0, 0.0});
  for (size_t i = 0; i < sel.activations.size(); ++i)
    if (use[i] && sel.activations[i].group >= 0) {
      auto& gr = group_range[static_cast<size_t>(sel.activations[i].group)];
      gr.first = std::min(gr.first, rng[i].first);
      gr.second = std::max(gr.second, rng[i].second);
    }
  for (size_t i = 0; i < sel.activations.size(); ++i) {
    if (!use[i]) continue;
    const auto& a = sel.activations[i];
    QPoint p;
    p.tensor = a.name;
    p.role = Role::Activation;
    p.dtype = a.settings.activation;
    p.lo = {rng[i].first};
    p.hi = {rng[i].second};
    auto r = a.group >= 0 ? group_range[static_cast<size_t>(a.group)] : rng[i];
    float s = 1;
    int32_t z = 0;
    activation_params(r.first, r.second, p.dtype, cfg.symmetric(p.dtype), s, z);
    p.scale = {s};
    p.zero_point = {z};
    p.method = calib_method_name(a.settings.method);
    if (a.per_channel) {
      // Depthwise readers only (quantize/depthwise.h): one scale per channel along axis 1.
      p.axis = 1;
      p.lo.clear(), p.hi.clear(), p.scale.clear(), p.zero_point.clear();
      for (const auto& [lo, hi] : a.channel_ranges) {
        activation_params(lo, hi, p.dtype, cfg.symmetric(p.dtype), s, z);
        p.lo.push_back(lo), p.hi.push_back(hi), p.scale.push_back(s), p.zero_point.push_back(z);
      }
      p.method = calib_method_name(a.settings.method) + " per channel";
    }
    p.consumers = a.consumers;
    p.group = a.group;
    pts.activation[a.name] = pts.points.size();
    pts.points.push_back(std::move(p));
  }
}

}  // namespace

std::string weight_refusal(const ir::Graph& g, bool ir3, const ir::Value* w, int axis,
                           const std::vector<const Candidate*>& users) {
  if (is_graph_output(g, w)) return "it is a graph output";
  if (w->is_graph_input && !ir3) return "it is a graph input (overridable initializer)";
  std::string why;
  size_t expected = 0;
  for (const Candidate* u : users) {
    expected += static_cast<size_t>(std::count(u->node->inputs.begin(), u->node->inputs.end(), w));
    if ((u->settings.per_channel ? u->slots.weight_axis : -1) != axis) why = "shared by nodes quantized differently";
  }
  if (w->uses.size() != expected && why.empty()) why = "also read by nodes that are not quantized";
  return why;
}

void keep_candidates_with_consistent_weights(const ir::Model& model, Selection& sel, std::vector<Candidate>& kept,
                                             int (*axis_of)(const Candidate&)) {
  const ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version > 0 && model.ir_version < 4;
  for (bool changed = true; changed;) {
    changed = false;
    std::map<const ir::Value*, std::vector<const Candidate*>> users;
    for (const Candidate& c : kept) users[c.node->input(1)].push_back(&c);
    std::vector<Candidate> next;
    for (const Candidate& c : kept) {
      const ir::Value* w = c.node->input(1);
      if (const std::string why = weight_refusal(g, ir3, w, axis_of(c), users[w]); !why.empty()) {
        sel.skipped.push_back({{"node", node_label(*c.node)}, {"op", c.node->op_type},
                               {"reason", "its weight '" + w->name + "' is " + (why.rfind("it is ", 0) == 0 ? why.substr(6) : why)}});
        changed = true;
      } else {
        next.push_back(c);
      }
    }
    kept.swap(next);
  }
}

QPoint weight_point(const ir::Value& w, int axis) {
  QPoint p;
  p.tensor = w.name;
  p.role = Role::Weight;
  p.dtype = ir::DType::I8;
  p.axis = axis;
  channel_ranges(*w.initializer, axis, p.lo, p.hi);
  for (size_t k = 0; k < p.lo.size(); ++k) {
    const double a = std::max(-p.lo[k], p.hi[k]);
    const float s = static_cast<float>(a / 127.0);
    p.scale.push_back(s >= 1e-30f ? s : 1.0f);
    p.zero_point.push_back(0);
  }
  p.method = "minmax";
  return p;
}

bool is_graph_output(const ir::Graph& g, const ir::Value* v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

Points build_points(const ir::Model& model, const Selection& sel, const Config& cfg, const std::vector<bool>& use,
                    const std::vector<std::pair<double, double>>& range) {
  Points pts;
  add_activation_points(sel, cfg, use, range, pts);
  const ir::Graph& g = *model.graph;
  const bool ir3 = model.ir_version > 0 && model.ir_version < 4;
  std::map<const ir::Value*, std::vector<const Candidate*>> weight_users;
  for (const auto& c : sel.nodes)
    if (c.slots.weight >= 0) weight_users[c.node->input(static_cast<size_t>(c.slots.weight))].push_back(&c);
  // Weights whose reader (any of them) keeps a float activation input, where the target runs such
  // layers in float (quantize/target.h): they stay float32.
  std::set<const ir::Value*> beside_float;
  if (cfg.target && cfg.target->float_weights_beside_float_input)
    for (const auto& c : sel.nodes)
      if (c.slots.weight >= 0)
        for (int slot : c.slots.activations)
          if (!pts.activation.count(c.node->input(static_cast<size_t>(slot))->name)) {
            const ir::Value* w = c.node->input(static_cast<size_t>(c.slots.weight));
            if (beside_float.insert(w).second)
              pts.skipped.push_back({{"tensor", w->name}, {"reason", "its layer's input stays float (the target runs the layer in float)"}});
          }
  for (const auto& c : sel.nodes) {
    if (c.slots.weight < 0) continue;
    const ir::Value* w = c.node->input(static_cast<size_t>(c.slots.weight));
    if (beside_float.count(w)) continue;
    const int axis = c.settings.per_channel ? c.slots.weight_axis : -1;
    const std::string why = weight_refusal(g, ir3, w, axis, weight_users[w]);
    if (!why.empty()) {
      if (!pts.weight.count(w->name)) pts.skipped.push_back({{"tensor", w->name}, {"reason", why}});
      continue;
    }
    if (!pts.weight.count(w->name)) {
      pts.weight[w->name] = pts.points.size();
      pts.points.push_back(weight_point(*w, axis));
      ++pts.weights;
    }
    if (cfg.quantize_bias && c.slots.bias >= 0) add_bias_point(g, ir3, c, pts.weight[w->name], axis, pts);
  }
  return pts;
}

}  // namespace mcc::transforms::quantize
