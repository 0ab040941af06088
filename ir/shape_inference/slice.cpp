// Shape rules of ops that take part of a tensor or grow it: Slice (attributes before opset 10,
// constant inputs from 10), Gather, Split (even split or `split` sizes; attribute before 13,
// input from 13) and Pad (attribute before 11, constant input from 11; an `axes` input is not
// modelled).
#include <algorithm>

#include "ir/shape_inference/rules.h"

namespace mcc::ir::shape_rules {
namespace {

struct SliceArgs {
  Dims starts, ends, axes, steps;
};

/// Slice's starts/ends/axes/steps with defaults filled in; nullopt when an input is not constant
/// or the lists disagree in length.
std::optional<SliceArgs> slice_args(const Node& n) {
  SliceArgs s;
  if (n.since_version >= 10) {
    auto st = const_ints(n.input(1)), e = const_ints(n.input(2));
    if (!st || !e) return std::nullopt;
    s.starts = *st;
    s.ends = *e;
    if (n.input(3)) {
      auto a = const_ints(n.input(3));
      if (!a) return std::nullopt;
      s.axes = *a;
    }
    if (n.input(4)) {
      auto p = const_ints(n.input(4));
      if (!p) return std::nullopt;
      s.steps = *p;
    }
  } else {
    s.starts = n.attr_ints("starts");
    s.ends = n.attr_ints("ends");
    s.axes = n.attr_ints("axes");
  }
  if (s.axes.empty())
    for (size_t i = 0; i < s.starts.size(); ++i) s.axes.push_back(static_cast<int64_t>(i));
  if (s.steps.empty()) s.steps.assign(s.starts.size(), 1);
  const size_t k = s.starts.size();
  if (s.ends.size() != k || s.axes.size() != k || s.steps.size() != k) return std::nullopt;
  return s;
}

void slice(const NodeShapes& c) {
  auto x = c.dims(0);
  if (!x) return;
  const auto s = slice_args(c.node);
  if (!s) return;
  const int64_t r = static_cast<int64_t>(x->size());
  Dims o = *x;
  for (size_t i = 0; i < s->starts.size(); ++i) {
    int64_t a = s->axes[i];
    if (!norm_axis(a, r) || s->steps[i] == 0) return;
    const int64_t d = (*x)[static_cast<size_t>(a)], st = s->steps[i];
    int64_t b = s->starts[i] < 0 ? s->starts[i] + d : s->starts[i];
    int64_t e = s->ends[i] < 0 ? s->ends[i] + d : s->ends[i];
    if (st > 0) {
      b = std::clamp(b, int64_t{0}, d);
      e = std::clamp(e, int64_t{0}, d);
    } else {
      b = std::clamp(b, int64_t{0}, d - 1);
      e = std::clamp(e, int64_t{-1}, d - 1);
    }
    const int64_t len = st > 0 ? (e - b + st - 1) / st : (b - e + (-st) - 1) / (-st);
    o[static_cast<size_t>(a)] = std::max<int64_t>(0, len);
  }
  c.out(0, c.dt0(), o);
}

void gather(const NodeShapes& c) {
  auto x = c.dims(0), idx = c.dims(1);
  if (!x) return;
  int64_t a = c.node.attr_int("axis", 0);
  if (!idx || !norm_axis(a, static_cast<int64_t>(x->size()))) return;
  Dims o(x->begin(), x->begin() + a);
  o.insert(o.end(), idx->begin(), idx->end());
  o.insert(o.end(), x->begin() + a + 1, x->end());
  c.out(0, c.dt0(), o);
}

void split(const NodeShapes& c) {
  const Node& n = c.node;
  auto x = c.dims(0);
  if (!x) return;
  int64_t a = n.attr_int("axis", 0);
  if (!norm_axis(a, static_cast<int64_t>(x->size()))) return;
  const int64_t d = (*x)[static_cast<size_t>(a)];
  const int64_t k = static_cast<int64_t>(n.outputs.size());
  std::optional<Dims> sizes = n.since_version >= 13
                                  ? (n.input(1) ? const_ints(n.input(1)) : std::optional<Dims>(Dims{}))
                                  : std::optional<Dims>(n.attr_ints("split"));
  if (!sizes) return;
  if (sizes->empty()) {
    const int64_t chunk = (d + k - 1) / k;
    for (int64_t i = 0; i < k; ++i) sizes->push_back(std::min(chunk, d - i * chunk));
  }
  if (static_cast<int64_t>(sizes->size()) != k) return;
  for (int64_t i = 0; i < k; ++i) {
    Dims o = *x;
    o[static_cast<size_t>(a)] = (*sizes)[static_cast<size_t>(i)];
    c.out(static_cast<size_t>(i), c.dt0(), o);
  }
}

void pad(const NodeShapes& c) {
  const Node& n = c.node;
  auto x = c.dims(0);
  if (!x) return;
  const int64_t r = static_cast<int64_t>(x->size());
  auto pads = n.since_version >= 11 ? const_ints(n.input(1)) : std::optional<Dims>(n.attr_ints("pads"));
  if (!pads || n.input(3)) return;  // axes input: left unknown
  if (static_cast<int64_t>(pads->size()) != 2 * r) return;
  Dims o = *x;
  for (int64_t i = 0; i < r; ++i)
    o[static_cast<size_t>(i)] += (*pads)[static_cast<size_t>(i)] + (*pads)[static_cast<size_t>(i + r)];
  c.out(0, c.dt0(), o);
}

constexpr NamedRule kRules[] = {{"Gather", gather}, {"Pad", pad}, {"Slice", slice}, {"Split", split}};

}  // namespace

std::span<const NamedRule> slice_rules() { return kRules; }

}  // namespace mcc::ir::shape_rules
