// Bias points with the overflow guard, and bias correction (see quantize/bias.h).
#include "transforms/quantize/bias.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "ir/errors.h"
#include "transforms/quantize/tune.h"

namespace mcc::transforms::quantize {

namespace {

using json = nlohmann::ordered_json;

constexpr double kBiasLimit = 1073741824.0;  // 2^30

std::string fmt_float(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
  return buf;
}

/// Why bias `b` stays float32 ("" when it is quantized).
std::string bias_refusal(const ir::Graph& g, bool ir3, const ir::Value* b, bool input_quantized) {
  if (!input_quantized) return "its input is not quantized";
  if (b->uses.size() != 1) return "shared by several nodes";
  if (is_graph_output(g, b)) return "it is a graph output";
  if (b->is_graph_input && !ir3) return "it is a graph input (overridable initializer)";
  return "";
}

/// Overflow guard: widens the weight scale of each channel whose bias would not fit in 2^30
/// with input scale sx. Returns the note ("" when nothing was widened); counts in `guarded`.
std::string guard_bias(const ir::Value& b, float sx, int axis, int div, QPoint& wp, int64_t& guarded) {
  const auto bv = b.initializer->data<float>();
  std::string note;
  for (size_t k = 0; k < bv.size(); ++k) {
    const size_t wc = axis < 0 ? 0 : k % static_cast<size_t>(div);
    const double need_scale = std::fabs(static_cast<double>(bv[k])) / (static_cast<double>(sx) * kBiasLimit);
    if (static_cast<double>(sx * wp.scale[wc]) >= need_scale) continue;
    float ns = static_cast<float>(need_scale / static_cast<double>(sx));
    while (static_cast<double>(sx * ns) < need_scale) ns = std::nextafter(ns, INFINITY);
    note += (note.empty() ? "" : "; ") + std::string("channel ") + std::to_string(wc) + " weight scale widened from " +
            fmt_float(wp.scale[wc]) + " to " + fmt_float(ns) + " so bias '" + b.name + "' fits int32";
    wp.scale[wc] = ns;
    ++guarded;
  }
  if (!note.empty()) wp.note += (wp.note.empty() ? "" : "; ") + note;
  return note;
}

}  // namespace

void add_bias_point(const ir::Graph& g, bool ir3, const Candidate& c, size_t weight_index, int axis, Points& pts) {
  const ir::Value* b = c.node->input(static_cast<size_t>(c.slots.bias));
  const ir::Value* x = c.node->input(0);
  const auto xp = x ? pts.activation.find(x->name) : pts.activation.end();
  const std::string why = bias_refusal(g, ir3, b, xp != pts.activation.end());
  if (!why.empty()) {
    pts.skipped.push_back({{"tensor", b->name}, {"reason", why}});
    return;
  }
  if (pts.points[xp->second].axis >= 0) {
    // Per-channel input scales (quantize/depthwise.h): the bias scale would differ per input channel.
    pts.skipped.push_back({{"tensor", b->name}, {"reason", "its input has per-channel scales (bias kept float32)"}});
    return;
  }
  const float sx = pts.points[xp->second].scale[0];
  QPoint& wp = pts.points[weight_index];
  const size_t n_bias = b->initializer->data<float>().size();
  const int div = axis < 0 ? 1 : (c.slots.bias_channel_div > 1 ? c.slots.bias_channel_div : static_cast<int>(wp.scale.size()));
  if (axis >= 0 && (n_bias % static_cast<size_t>(div) != 0 || static_cast<size_t>(div) != wp.scale.size())) {
    pts.skipped.push_back({{"tensor", b->name}, {"reason", "bias length does not match the weight's channels"}});
    return;
  }
  if (is_16bit(pts.points[xp->second].dtype)) {
    // Measured: an int32 bias on a 16-bit input lets ONNX Runtime 1.30 fuse the Conv into an
    // integer kernel whose uint16 x int8 accumulation loses accuracy (YOLOX-nano, all inputs
    // uint16: output cosine 0.899 with int32 biases, 0.999 with float32 biases).
    pts.skipped.push_back({{"tensor", b->name}, {"reason", "its input is 16-bit (bias kept float32)"}});
    return;
  }
  QPoint p;
  p.note = guard_bias(*b, sx, axis, div, wp, pts.guarded);
  p.tensor = b->name;
  p.role = Role::Bias;
  p.dtype = ir::DType::I32;
  p.axis = axis < 0 ? -1 : 0;
  const size_t n = axis < 0 ? 1 : n_bias;
  for (size_t k = 0; k < n; ++k) {
    p.scale.push_back(sx * wp.scale[axis < 0 ? 0 : k % static_cast<size_t>(div)]);
    p.zero_point.push_back(0);
  }
  p.method = "derived: input scale x weight scale";
  p.consumers = {node_label(*c.node)};
  pts.points.push_back(std::move(p));
  ++pts.biases;
}

BiasCorrections correct_biases(const ir::Graph& g, const Selection& sel, const Points& pts, const CalibrationResult& cal,
                               const ExactShifts& exact) {
  BiasCorrections out;
  out.enabled = true;
  for (const auto& c : sel.nodes) {
    if (c.slots.weight < 0) continue;
    const ir::Value* w = c.node->input(static_cast<size_t>(c.slots.weight));
    const auto wp = pts.weight.find(w->name);
    if (wp == pts.weight.end()) continue;
    std::string why;
    const ir::Value* b = c.slots.bias >= 0 ? c.node->input(static_cast<size_t>(c.slots.bias)) : nullptr;
    const auto m = c.node->input(0) ? cal.channels.find(c.node->input(0)->name) : cal.channels.end();
    if (!b) why = "no float32 bias input";
    else if (b->uses.size() != 1 || is_graph_output(g, b)) why = "bias shared or a graph output";
    else if (m == cal.channels.end() || m->second.count == 0) why = "no calibrated input means";
    std::optional<std::vector<double>> shift;
    const auto known = exact.find(w->name);
    if (why.empty()) shift = known != exact.end() ? known->second : bias_shift(*c.node, c.slots, pts.points[wp->second], m->second, why);
    if (shift && shift->size() != static_cast<size_t>(b->initializer->numel())) shift.reset(), why = "bias length differs";
    if (!shift) {
      out.skipped.push_back({{"node", node_label(*c.node)}, {"reason", why}});
      continue;
    }
    json vals = json::array();
    for (double d : *shift) vals.push_back(static_cast<double>(static_cast<float>(d)));
    out.corrected.push_back({{"tensor", b->name}, {"node", node_label(*c.node)}, {"subtract", vals}});
  }
  return out;
}

void apply_bias_corrections(ir::Graph& g, const json& corrected) {
  for (const auto& e : corrected) {
    const std::string name = e.at("tensor").get<std::string>();
    ir::Value* b = g.find_value(name);
    if (!b || !b->initializer || b->initializer->dtype() != ir::DType::F32)
      throw ModelError("bias correction names '" + name + "', which is not a float32 constant of the model");
    const auto& d = e.at("subtract");
    if (d.size() != static_cast<size_t>(b->initializer->numel()))
      throw ModelError("bias correction of '" + name + "' has " + std::to_string(d.size()) + " values for a bias of " +
                       std::to_string(b->initializer->numel()));
    ir::Tensor t = b->initializer->clone();
    auto v = t.mutable_data<float>();
    for (size_t k = 0; k < v.size(); ++k)
      v[k] = static_cast<float>(static_cast<double>(v[k]) - static_cast<double>(static_cast<float>(d[k].get<double>())));
    b->initializer = std::move(t);
  }
}

}  // namespace mcc::transforms::quantize
