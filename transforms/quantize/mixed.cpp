// Measured sensitivity search of the quantize stage (method=auto, mixed_target, keep_float_top).
//
// Before: every selected activation int8 with the stage's method (e.g. YOLOX-nano: 97 of 97).
// After:  each activation has the range method that measured best, and the k activations whose
//         8-bit quantization costs most stay float (their consumers keep int8 weights and a
//         float32 bias); k is recorded, so replay needs no data.
//
// Measure. For unit u (an activation, or a shared-scale group) and candidate range r:
//   loss(u, r) = 1 - mean_{samples, float outputs} cos(y(weights int8 + u quantized with r), y_float)
// on the first `sensitivity_samples` calibration samples, cpu Executor, bias corrections applied.
// method=auto keeps argmin_r loss(u, r) over minmax, percentile, mse (ties: that order).
// Selection. Units sorted by loss, largest first (ties: graph order). keep_float_top=k keeps the
// first k float. mixed_target=c finds the smallest k whose whole model (all other activations
// quantized) measures mean cosine >= c: k = 0, 1, 2, 4, ... until met, then bisection between the
// last miss and the first hit (the measure is assumed to improve with k; the record lists every
// k measured). When even every unit float misses c, all stay float and the record says so.
// Float runs. With float_run_gap=g > 0 (the target's, see quantize/target.h) each k's float set is
// widened: up to g quantized activations between two float ones (graph order) go float with their
// units, so the fallback forms a few runs instead of islands; the record lists them (joined_float).
// Cost: units x candidates + O(2 log2 units) model runs over the samples.
// Does not apply when: nothing is selected or calibrated (the stage then has no activations).
// Numerical notes: the measure is mcc's cpu Executor on calibration data, not the deployment
// runtime on held-out data; fake-quantized activations under the cpu QDQ kernels follow the ONNX
// formulas exactly, integer kernels of other runtimes may round differently.
#include "transforms/quantize/mixed.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "backends/executor.h"
#include "ir/errors.h"
#include "ir/onnx_io.h"
#include "ir/sample_data.h"
#include "judge/probability_outputs.h"

namespace mcc::transforms::quantize {

namespace {
using json = nlohmann::ordered_json;

double cosine(const ir::Tensor& a, const ir::Tensor& b) {
  const auto x = a.data<float>();
  const auto y = b.data<float>();
  if (x.size() != y.size()) return 0;
  double xy = 0, xx = 0, yy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double p = x[i], q = y[i];
    if (!std::isfinite(p) || !std::isfinite(q)) continue;
    xy += p * q, xx += p * p, yy += q * q;
  }
  if (xx == 0 && yy == 0) return 1;
  if (xx == 0 || yy == 0) return 0;
  return xy / std::sqrt(xx * yy);
}

double round6(double v) { return std::round(v * 1e6) / 1e6; }

}  // namespace

// Float runs (see mixed.h): each boundary between int8 and float costs the runtime a
// QuantizeLinear/DequantizeLinear pair, and ONNX Runtime a change between its NHWC int8 and NCHW
// float kernels.
std::vector<bool> join_float_runs(std::vector<bool> use, const std::vector<bool>& ok,
                                  const std::vector<std::vector<size_t>>& units, const std::vector<size_t>& unit_of,
                                  int64_t gap) {
  if (gap <= 0) return use;
  std::vector<size_t> stretch;  // quantized activations since the last float one (or the start)
  auto fill = [&](size_t lo, size_t hi) {  // fill `stretch`, all in [lo, hi]
    if (static_cast<int64_t>(stretch.size()) > gap) return;
    for (size_t i : stretch) {
      const auto& members = units[unit_of[i]];
      if (std::all_of(members.begin(), members.end(), [&](size_t j) { return j >= lo && j <= hi; }))
        for (size_t j : members) use[j] = false;
    }
  };
  const std::vector<bool> chosen = use;
  bool any_float = false;
  size_t last_float = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (!ok[i] || unit_of[i] >= units.size()) continue;
    if (chosen[i]) {
      stretch.push_back(i);
      continue;
    }
    fill(any_float ? last_float : 0, i);
    stretch.clear();
    any_float = true, last_float = i;
  }
  if (any_float) fill(last_float, chosen.size());
  return use;
}

OutputProbe::OutputProbe(const ir::Model& float_model, const std::vector<std::string>& sample_dirs, int threads,
                         json corrections)
    : bytes_(ir::serialize_model(float_model)),
      threads_(threads),
      corrections_(std::move(corrections)),
      probability_(judge::probability_outputs(*float_model.graph)) {
  backends::ExecOptions eo;
  eo.threads = threads_;
  eo.fuse = false;  // node by node, as the candidates below are run
  eo.keep_weight_copies = !backends::lean_weight_copies(float_model);
  backends::Executor ex(float_model, eo);
  for (const auto& d : sample_dirs) {
    ir::BoundSample s = ir::bind_sample(*float_model.graph, ir::load_sample(d, false));
    std::vector<std::pair<std::string, ir::Tensor>> f;
    std::vector<std::pair<std::string, backends::RValue>> rf;
    for (auto& [name, t] : s.feeds) {
      f.emplace_back(name, t.clone());
      rf.emplace_back(name, backends::RValue::of(std::move(t)));
    }
    std::vector<ir::Tensor> want;
    for (auto& r : ex.run(rf))
      want.push_back(r.kind == backends::RValue::Kind::Tensor && r.tensor.defined() && r.tensor.dtype() == ir::DType::F32
                         ? std::move(r.tensor)
                         : ir::Tensor());
    feeds_.push_back(std::move(f));
    want_.push_back(std::move(want));
  }
}

double OutputProbe::mean_cosine(const Plan& plan) {
  ir::Model m = ir::load_model_from_bytes(bytes_, base_dir_);
  // Bias corrections: the same arithmetic as the stage (B - float(d)), for the layers whose weight
  // the plan quantizes (a target may keep a layer float, quantize/target.h).
  std::set<std::string> weights;
  for (const auto& p : plan.points)
    if (p.role == Role::Weight) weights.insert(p.tensor);
  for (const auto& e : corrections_) {
    ir::Value* b = m.graph->find_value(e.at("tensor").get<std::string>());
    if (!b || !b->initializer || b->uses.size() != 1) continue;
    const ir::Node* layer = b->uses[0].user;
    if (!layer || layer->inputs.size() < 2 || !layer->input(1) || !weights.count(layer->input(1)->name)) continue;
    ir::Tensor t = b->initializer->clone();
    auto v = t.mutable_data<float>();
    const auto& d = e.at("subtract");
    for (size_t k = 0; k < v.size() && k < d.size(); ++k)
      v[k] = static_cast<float>(static_cast<double>(v[k]) - static_cast<double>(static_cast<float>(d[k].get<double>())));
    b->initializer = std::move(t);
  }
  apply_plan(m, plan);
  backends::ExecOptions eo;
  eo.threads = threads_;
  // Node by node: the QDQ reference semantics, so the choices do not depend on the cpu backend's
  // fused integer kernels (their results may differ by one unit where a value lies near a tie).
  eo.fuse = false;
  eo.keep_weight_copies = !backends::lean_weight_copies(m);
  backends::Executor ex(m, eo);
  double sum = 0;
  int64_t n = 0;
  for (size_t s = 0; s < feeds_.size(); ++s) {
    std::vector<std::pair<std::string, backends::RValue>> rf;
    for (const auto& [name, t] : feeds_[s]) rf.emplace_back(name, backends::RValue::of(t.clone()));
    const auto got = ex.run(rf);
    for (size_t o = 0; o < got.size() && o < want_[s].size(); ++o) {
      if (!want_[s][o].defined()) continue;
      const auto& r = got[o];
      const bool f32 = r.kind == backends::RValue::Kind::Tensor && r.tensor.defined() && r.tensor.dtype() == ir::DType::F32;
      if (f32) sum += probability_[o] && judge::nothing_in_both(r.tensor, want_[s][o]) ? 1.0 : cosine(r.tensor, want_[s][o]);
      ++n;
    }
  }
  ++evaluations_;
  return n ? sum / static_cast<double>(n) : 1.0;
}

MixedOutcome mixed_search(OutputProbe& probe, const std::vector<std::vector<size_t>>& units,
                          const std::vector<std::vector<RangeChoice>>& choices, const std::vector<bool>& ok,
                          const std::vector<std::string>& names,
                          const std::function<Plan(const std::vector<bool>&, const std::vector<std::pair<double, double>>&, bool)>& build,
                          const MixedConfig& cfg) {
  const size_t n = ok.size();
  MixedOutcome out;
  out.use = ok;
  out.range.resize(n);
  out.method.resize(n);
  for (size_t i = 0; i < n; ++i)
    if (ok[i] && !choices[i].empty()) out.range[i] = choices[i][0].range, out.method[i] = choices[i][0].method;

  // Sensitivity of each unit, with its best candidate.
  std::vector<double> loss(units.size(), 0.0);
  json units_j = json::array();
  for (size_t u = 0; u < units.size(); ++u) {
    const size_t cands = choices[units[u][0]].size();
    double best = -2;
    size_t best_c = 0;
    json tried = json::object();
    for (size_t c = 0; c < cands; ++c) {
      std::vector<bool> use(n, false);
      std::vector<std::pair<double, double>> rng = out.range;
      for (size_t i : units[u]) use[i] = true, rng[i] = choices[i][c].range;
      const double cs = probe.mean_cosine(build(use, rng, false));
      tried[choices[units[u][0]][c].method] = round6(1 - cs);
      if (cs > best) best = cs, best_c = c;
    }
    for (size_t i : units[u]) out.range[i] = choices[i][best_c].range, out.method[i] = choices[i][best_c].method;
    loss[u] = 1 - best;
    json t = json::array();
    for (size_t i : units[u]) t.push_back(names[i]);
    units_j.push_back({{"tensors", t}, {"method", out.method[units[u][0]]}, {"cosine_loss", round6(loss[u])}});
    if (cands > 1) units_j.back()["loss_by_method"] = tried;
  }
  std::vector<size_t> order(units.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return loss[a] > loss[b]; });

  std::vector<size_t> unit_of(n, units.size());
  for (size_t u = 0; u < units.size(); ++u)
    for (size_t i : units[u]) unit_of[i] = u;
  auto with_float = [&](size_t k) {
    std::vector<bool> use = ok;
    for (size_t j = 0; j < k && j < order.size(); ++j)
      for (size_t i : units[order[j]]) use[i] = false;
    return join_float_runs(use, ok, units, unit_of, cfg.float_run_gap);
  };
  json tried_k = json::array();
  auto measure = [&](size_t k) {
    const double c = probe.mean_cosine(build(with_float(k), out.range, true));
    tried_k.push_back({{"keep_float", k}, {"cosine", round6(c)}});
    return c;
  };
  size_t k = 0;
  double cos_k = 0;
  bool met = true;
  if (cfg.keep_top > 0) {
    k = std::min(static_cast<size_t>(cfg.keep_top), units.size());
    cos_k = measure(k);
  } else if (cfg.target > 0) {
    size_t miss = 0, hit = 0;
    double c = measure(0);
    if (c >= cfg.target) {
      k = 0, cos_k = c;
    } else {
      size_t step = 1;
      bool found = false;
      double c_hit = 0;
      for (;;) {
        const size_t t = std::min(step, units.size());
        c = measure(t);
        if (c >= cfg.target) { hit = t, c_hit = c, found = true; break; }
        miss = t;
        if (t == units.size()) break;
        step *= 2;
      }
      if (!found) {
        k = units.size(), cos_k = c, met = false;
      } else {
        while (hit - miss > 1) {
          const size_t mid = miss + (hit - miss) / 2;
          const double cm = measure(mid);
          if (cm >= cfg.target) hit = mid, c_hit = cm;
          else miss = mid;
        }
        k = hit, cos_k = c_hit;
      }
    }
  } else {
    cos_k = measure(0);
  }
  out.use = with_float(k);
  for (size_t i = 0; i < n; ++i) out.kept_float += ok[i] && !out.use[i];
  out.cosine = cos_k;
  json kept = json::array();
  std::vector<bool> chosen(n, false);
  for (size_t j = 0; j < k && j < order.size(); ++j)
    for (size_t i : units[order[j]]) kept.push_back(names[i]), chosen[i] = true;
  json joined = json::array();
  for (size_t i = 0; i < n; ++i)
    if (ok[i] && !out.use[i] && !chosen[i]) joined.push_back(names[i]);
  out.record = {{"target_cosine", cfg.target},
                {"keep_float_top", cfg.keep_top},
                {"samples", static_cast<int64_t>(probe.samples())},
                {"model_runs", probe.evaluations()},
                {"kept_float", kept}};
  if (cfg.float_run_gap > 0) out.record["float_run_gap"] = cfg.float_run_gap, out.record["joined_float"] = joined;
  out.record["cosine"] = round6(cos_k);
  out.record["target_met"] = cfg.target > 0 ? json(met && cos_k >= cfg.target) : json(nullptr);
  out.record["searched"] = tried_k;
  out.record["sensitivity"] = units_j;
  if (cfg.target > 0 && !met)
    spdlog::warn("quantize: mixed_target={} not reached even with every activation float (measured cosine {:.5f}); "
                 "the weights alone cost more", cfg.target, cos_k);
  return out;
}

}  // namespace mcc::transforms::quantize
