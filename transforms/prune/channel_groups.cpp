// prune (mode=channel): the channel dependency analysis. Finds which output channels can be
// removed together and every tensor that must shrink with them (in the spirit of NNCF's
// channel-alignment groups).
//
// Before (a residual block):            After analysis:
//   a = Conv(x, Wa) ; b = BN(a) ;         group 0 = {Conv a, Conv c} (joined at the Add),
//   r = Relu(b)     ; c = Conv(r, Wc) ;   group 1 = {Conv d} ...
//   s = Add(c, a2)  ; d = Conv(s, Wd)     sites: Wa axis 0, BN params axis 0, Wc axis 1, Wd axis 1 ...
//
// Each value that carries prunable channels has a descriptor: the channel axis counted from the
// end (broadcasting aligns from the right) and a list of segments, each a run of channels owned
// by one group (group -1: channels that never change). A producer (Conv/ConvTranspose with
// group=1, Gemm with transA=0, MatMul, all with an initializer weight) starts a fresh group the
// size of its output channels. Descriptors flow through: activations and pooling (unchanged),
// BatchNormalization/InstanceNormalization (their parameters become sites), depthwise Conv
// (group = C = input channels: weight, bias and the `group` attribute become sites), elementwise
// ops with a constant operand (sliced when it has C entries on the channel axis, untouched when it
// broadcasts there), Add/Mul/Sub/... of two described values (their groups are joined: channels
// that meet are kept or removed together), Concat on the channel axis (segments concatenate; on
// another axis it joins like Add), Flatten/Reshape to [N, C] when the dims after the channel are 1
// (after GlobalAveragePool). A consumer Conv/Gemm/MatMul takes the segments on its weight's
// input-channel axis.
//
// Does not apply when (the group is blocked and reported, never an error): a described value is a
// graph output or captured by a subgraph; it feeds an op that cannot be followed (Reshape to
// another shape, Split, Slice, Transpose, Shape, grouped Conv with 1 < group < C, ...); a
// parameter to cut is not an initializer; an Add meets a value whose channels cannot change; a
// depthwise multiplier > 1. Only the main graph is analysed.
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "ir/errors.h"
#include "ir/op_attrs.h"
#include "ir/op_facts.h"
#include "ir/weight_layout.h"
#include "transforms/prune/prune.h"

namespace mcc::transforms::prune {

namespace {

struct Desc {
  int neg_axis = -1;
  int rank = -1;  // -1 unknown
  std::vector<Segment> segs;
  bool trailing_ones = false;  // every dim after the channel axis is 1
  int64_t total() const {
    int64_t t = 0;
    for (const auto& s : segs) t += s.size;
    return t;
  }
};

bool same_bounds(const std::vector<Segment>& a, const std::vector<Segment>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size != b[i].size) return false;
  return true;
}

bool float_init(const ir::Value* v) {
  if (!v || !v->initializer) return false;
  const auto d = v->initializer->dtype();
  return d == ir::DType::F32 || d == ir::DType::F64 || d == ir::DType::F16 || d == ir::DType::BF16;
}

/// Static dims of a constant-like or shaped value.
std::optional<std::vector<int64_t>> static_dims(const ir::Value* v) {
  if (!v) return std::nullopt;
  if (v->initializer) return v->initializer->dims();
  if (v->producer && v->producer->is("Constant"))
    if (const ir::Tensor* t = v->producer->attr_tensor("value")) return t->dims();
  return v->shape.static_dims();
}

class Analyzer {
 public:
  explicit Analyzer(ir::Graph& g) : g_(g) {
    for (size_t i = 0; i < g.nodes().size(); ++i) order_[g.nodes()[i]] = i;
  }

  ChannelAnalysis run();

 private:
  int new_group(ir::Node* producer, int64_t channels) {
    const int id = static_cast<int>(parent_.size());
    parent_.push_back(id);
    RawGroup rg;
    rg.channels = channels;
    rg.producers.push_back(producer);
    raw_.push_back(std::move(rg));
    return id;
  }
  int find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void join(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    parent_[b] = a;
  }
  void block(const std::vector<Segment>& segs, const std::string& why) {
    for (const auto& s : segs)
      if (s.group >= 0) blocks_.emplace_back(s.group, why);
  }
  void block_inputs(const ir::Node& n, const std::string& why) {
    for (const ir::Value* v : n.inputs)
      if (auto d = desc(v)) block(d->segs, why);
  }
  const Desc* desc(const ir::Value* v) const {
    if (!v) return nullptr;
    auto it = descs_.find(v);
    return it == descs_.end() ? nullptr : &it->second;
  }
  void set_desc(ir::Value* v, Desc d) {
    if (!v) return;
    if (d.rank < 0 && v->shape.rank_known()) d.rank = static_cast<int>(v->shape.rank());
    if (!d.trailing_ones && d.rank > 0) {
      if (auto dims = v->shape.static_dims()) {
        bool ones = true;
        for (int i = d.rank + d.neg_axis + 1; i < d.rank; ++i) ones = ones && (*dims)[i] == 1;
        d.trailing_ones = ones;
      }
    }
    described_.push_back(v);
    descs_[v] = std::move(d);
  }
  void site(ir::Node* n, int input, int axis, std::vector<Segment> segs, bool reshape = false) {
    sites_.push_back({n, input, axis, std::move(segs), reshape});
  }
  /// A constant operand of an elementwise op: a site when it has C entries on the channel axis,
  /// nothing when it broadcasts there; false when it cannot be followed.
  bool constant_operand(ir::Node* n, int i, const Desc& d) {
    const ir::Value* v = n->inputs[i];
    const auto dims = static_dims(v);
    if (!dims) return false;
    const int idx = static_cast<int>(dims->size()) + d.neg_axis;
    if (idx < 0 || (*dims)[idx] == 1) return true;
    if ((*dims)[idx] != d.total() || !v->initializer) return false;
    site(n, i, idx, d.segs);
    return true;
  }

  bool producer(ir::Node* n);
  void depthwise_or_grouped(ir::Node* n, const Desc& d, int64_t group);
  void elementwise(ir::Node* n, bool variadic_all);
  void concat(ir::Node* n);
  void flatten_or_reshape(ir::Node* n, const Desc& d);
  bool passthrough_op(const ir::Node& n) const;

  struct RawGroup {
    int64_t channels = 0;
    std::vector<ir::Node*> producers, depthwise;
  };
  ir::Graph& g_;
  std::map<const ir::Node*, size_t> order_;
  std::vector<int> parent_;
  std::vector<RawGroup> raw_;
  std::vector<std::pair<int, std::string>> blocks_;
  std::unordered_map<const ir::Value*, Desc> descs_;
  std::vector<ir::Value*> described_;
  std::vector<SliceSite> sites_;
  std::vector<std::pair<ir::Node*, std::vector<Segment>>> group_attrs_;
};

bool Analyzer::passthrough_op(const ir::Node& n) const {
  return n.is(n.op_type) && ir::passes_channels_through(n.op_type);
}

bool Analyzer::producer(ir::Node* n) {
  ir::Value* w = n->input(1);
  if (!float_init(w) || !n->outputs.size() || !n->outputs[0]) return false;
  const auto& wd = w->initializer->dims();
  const Desc* in = desc(n->input(0));
  // Conv/ConvTranspose (group 1, rank >= 3), Gemm (transA 0) and MatMul with a rank-2 weight.
  const auto l = ir::weight_layout(*n, wd);
  if (!l || l->group != 1 || (n->is("Gemm") && ir::GemmAttrs(*n).trans_a())) return false;
  const int out_axis = l->out_axis, in_axis = l->in_axis;
  int neg_in = -1, neg_out = -1, rank = -1;
  if (n->is("Conv") || n->is("ConvTranspose")) {
    neg_in = neg_out = -static_cast<int>(wd.size() - 1);
    rank = static_cast<int>(wd.size());
  } else if (n->is("Gemm")) {
    rank = 2;
  }
  const int64_t cout = l->out_channels, cin = wd[static_cast<size_t>(in_axis)];
  if (in) {
    if (in->neg_axis != neg_in || in->total() != cin) block(in->segs, "feeds " + n->describe() + " on another axis");
    else site(n, 1, in_axis, in->segs);
  }
  const int gid = new_group(n, cout);
  site(n, 1, out_axis, {{gid, cout}});
  if (ir::Value* b = n->input(2)) {
    if (desc(b)) block(desc(b)->segs, "is the bias of " + n->describe());
    const auto bd = static_dims(b);
    if (!bd) {
      blocks_.emplace_back(gid, "the bias of " + n->describe() + " has an unknown shape");
    } else if (!bd->empty() && bd->back() == cout && cout != 1) {
      if (!b->initializer) blocks_.emplace_back(gid, "the bias of " + n->describe() + " is not an initializer");
      else site(n, 2, static_cast<int>(bd->size()) - 1, {{gid, cout}});
    } else if (ir::checked_numel(*bd) != 1 && !(!bd->empty() && bd->back() == 1)) {
      blocks_.emplace_back(gid, "the bias of " + n->describe() + " does not broadcast over channels");
    }
  }
  for (size_t i = 3; i < n->inputs.size(); ++i)
    if (auto d = desc(n->inputs[i])) block(d->segs, "feeds " + n->describe() + " input " + std::to_string(i));
  Desc out;
  out.neg_axis = neg_out;
  out.rank = rank;
  out.segs = {{gid, cout}};
  set_desc(n->outputs[0], std::move(out));
  return true;
}

void Analyzer::depthwise_or_grouped(ir::Node* n, const Desc& d, int64_t group) {
  ir::Value* w = n->input(1);
  const bool dw = float_init(w) && w->initializer->rank() >= 3 && group == d.total() &&
                  w->initializer->dims()[0] == group && w->initializer->dims()[1] == 1 &&
                  d.neg_axis == -static_cast<int>(w->initializer->rank() - 1);
  if (!dw) {
    block(d.segs, "feeds " + n->describe() + " (grouped, group=" + std::to_string(group) + ")");
    return;
  }
  site(n, 1, 0, d.segs);
  if (ir::Value* b = n->input(2)) {
    if (!b->initializer) {
      block(d.segs, "the bias of depthwise " + n->describe() + " is not an initializer");
      return;
    }
    site(n, 2, 0, d.segs);
  }
  group_attrs_.emplace_back(n, d.segs);
  for (const auto& s : d.segs)
    if (s.group >= 0) raw_[s.group].depthwise.push_back(n);
  Desc out = d;
  out.trailing_ones = false;
  set_desc(n->outputs[0], std::move(out));
}

void Analyzer::elementwise(ir::Node* n, bool variadic_all) {
  // The first described operand gives the layout; others must match it or be constants.
  const Desc* first = nullptr;
  for (const ir::Value* v : n->inputs)
    if (!first) first = desc(v);
  Desc out = *first;
  const size_t count = variadic_all ? n->inputs.size() : std::min<size_t>(2, n->inputs.size());
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    const ir::Value* v = n->inputs[i];
    if (!v) continue;
    if (i >= count) {
      if (desc(v)) block(desc(v)->segs, "feeds input " + std::to_string(i) + " of " + n->describe());
      continue;
    }
    const Desc* d = desc(v);
    if (d == first) continue;
    if (d) {
      if (d->neg_axis != first->neg_axis || !same_bounds(d->segs, first->segs)) {
        block(d->segs, "meets other channels at " + n->describe());
        block(first->segs, "meets other channels at " + n->describe());
        continue;
      }
      for (size_t k = 0; k < d->segs.size(); ++k) {
        const int a = d->segs[k].group, b = first->segs[k].group;
        if (a >= 0 && b >= 0) join(a, b);
        else if (a >= 0 || b >= 0) block({{std::max(a, b), 0}}, "meets fixed channels at " + n->describe());
      }
      out.trailing_ones = out.trailing_ones && d->trailing_ones;
      continue;
    }
    if (!constant_operand(n, static_cast<int>(i), *first))
      block(first->segs, "an operand of " + n->describe() + " cannot be cut along the channels");
  }
  if (n->outputs.size() > 0) set_desc(n->outputs[0], std::move(out));
}

void Analyzer::concat(ir::Node* n) {
  const Desc* first = nullptr;
  for (const ir::Value* v : n->inputs)
    if (!first) first = desc(v);
  int64_t axis = n->attr_int("axis", 1);
  int rank = first->rank;
  for (const ir::Value* v : n->inputs)
    if (auto d = desc(v); rank < 0 && d) rank = d->rank;
  if (axis >= 0 && rank < 0) {
    block_inputs(*n, "feeds " + n->describe() + " whose inputs have an unknown rank");
    return;
  }
  const int neg = axis < 0 ? static_cast<int>(axis) : static_cast<int>(axis) - rank;
  if (neg != first->neg_axis) {  // along another axis: the inputs' channels meet like at an Add
    elementwise(n, true);
    return;
  }
  Desc out;
  out.neg_axis = first->neg_axis;
  out.rank = rank;
  out.trailing_ones = true;
  for (const ir::Value* v : n->inputs) {
    const Desc* d = desc(v);
    if (d && d->neg_axis == first->neg_axis) {
      out.segs.insert(out.segs.end(), d->segs.begin(), d->segs.end());
      out.trailing_ones = out.trailing_ones && d->trailing_ones;
      continue;
    }
    const auto dims = static_dims(v);
    const int idx = dims ? static_cast<int>(dims->size()) + first->neg_axis : -1;
    if (d || idx < 0) {
      block_inputs(*n, "feeds " + n->describe() + " beside an input of unknown channel count");
      return;
    }
    out.segs.push_back({-1, (*dims)[idx]});
    out.trailing_ones = false;
  }
  set_desc(n->outputs[0], std::move(out));
}

void Analyzer::flatten_or_reshape(ir::Node* n, const Desc& d) {
  const int ci = d.rank >= 0 ? d.rank + d.neg_axis : -1;
  const std::string why = "feeds " + n->describe() + " which mixes the channels with other dims";
  if (ci != 1 || !d.trailing_ones) {
    block(d.segs, why);
    return;
  }
  if (n->is("Flatten")) {
    int64_t axis = n->attr_int("axis", 1);
    if (axis < 0) axis += d.rank;
    if (axis != 1) {
      block(d.segs, why);
      return;
    }
  } else {
    const ir::Value* s = n->input(1);
    if (desc(s) || !s || !s->initializer || s->initializer->dtype() != ir::DType::I64 || s->initializer->numel() != 2) {
      block(d.segs, why);
      return;
    }
    const auto sv = s->initializer->data<int64_t>();
    if (sv[1] == d.total() && d.total() != 1) site(n, 1, 1, d.segs, /*reshape=*/true);
    else if (!(sv[1] == -1 && sv[0] != -1)) {
      block(d.segs, why);
      return;
    }
  }
  Desc out;
  out.neg_axis = -1;
  out.rank = 2;
  out.segs = d.segs;
  out.trailing_ones = true;
  set_desc(n->outputs[0], std::move(out));
}

ChannelAnalysis Analyzer::run() {
  for (ir::Node* n : g_.nodes()) {
    const Desc* d0 = desc(n->input(0));
    bool any = false;
    for (const ir::Value* v : n->inputs) any = any || desc(v);
    if (producer(n)) continue;
    if (!any) continue;
    if (!d0) {  // described values only on later inputs
      if ((n->is("Add") || n->is("Mul") || n->is("Sub") || n->is("Div") || n->is("Max") || n->is("Min") ||
           n->is("Sum") || n->is("Mean") || n->is("Concat")) && n->outputs.size() == 1) {
        if (n->is("Concat")) concat(n);
        else elementwise(n, n->is("Sum") || n->is("Mean") || n->is("Max") || n->is("Min"));
      } else {
        block_inputs(*n, "feeds " + n->describe() + " which cannot be followed");
      }
      continue;
    }
    const Desc d = *d0;
    if (n->is("Conv")) {
      depthwise_or_grouped(n, d, ir::ConvAttrs(*n).group());
    } else if (passthrough_op(*n)) {
      bool ok = true;
      for (size_t i = 1; i < n->inputs.size(); ++i) {
        if (!n->inputs[i]) continue;
        if (desc(n->inputs[i])) ok = false;
        else if (n->is("Pow") || n->is("Clip")) {
          const auto dims = static_dims(n->inputs[i]);
          ok = ok && dims && ir::checked_numel(*dims) == 1;
        }
      }
      for (size_t i = 1; i < n->outputs.size(); ++i)
        if (n->outputs[i] && !n->outputs[i]->uses.empty()) ok = false;
      if (!ok) {
        block_inputs(*n, "feeds " + n->describe() + " with extra inputs or outputs that cannot be followed");
        continue;
      }
      Desc out = d;
      if (n->is("GlobalAveragePool") || n->is("GlobalMaxPool") || n->is("GlobalLpPool")) out.trailing_ones = true;
      else if (n->is("MaxPool") || n->is("AveragePool") || n->is("LpPool")) out.trailing_ones = false;
      set_desc(n->outputs[0], std::move(out));
    } else if (n->is("BatchNormalization") || n->is("InstanceNormalization")) {
      bool ok = true;
      for (size_t i = 1; i < n->inputs.size(); ++i) {
        const ir::Value* p = n->inputs[i];
        ok = ok && p && p->initializer && p->initializer->rank() == 1 && p->initializer->numel() == d.total();
      }
      for (size_t i = 1; i < n->outputs.size(); ++i)
        if (n->outputs[i] && !n->outputs[i]->uses.empty()) ok = false;
      if (!ok || d.rank + d.neg_axis != 1) {
        block(d.segs, "feeds " + n->describe() + " whose parameters cannot be cut");
        continue;
      }
      for (size_t i = 1; i < n->inputs.size(); ++i) site(n, static_cast<int>(i), 0, d.segs);
      set_desc(n->outputs[0], d);
    } else if (n->is("PRelu") || n->is("Add") || n->is("Mul") || n->is("Sub") || n->is("Div") || n->is("Max") ||
               n->is("Min") || n->is("Sum") || n->is("Mean")) {
      elementwise(n, !(n->is("PRelu")));
    } else if (n->is("Concat")) {
      concat(n);
    } else if (n->is("Flatten") || n->is("Reshape")) {
      flatten_or_reshape(n, d);
    } else {
      block_inputs(*n, "feeds " + n->describe() + " which cannot be followed");
    }
  }

  // Values that leave the graph or enter a subgraph keep their channels.
  for (ir::Value* v : described_) {
    const Desc& d = descs_.at(v);
    if (std::find(g_.outputs.begin(), g_.outputs.end(), v) != g_.outputs.end())
      block(d.segs, "reaches the graph output '" + v->name + "'");
    for (const ir::Use& u : v->uses)
      if (u.user->owner != &g_) {
        block(d.segs, "is captured by a subgraph ('" + v->name + "')");
        break;
      }
  }

  // Roots, in order of their first producer.
  ChannelAnalysis out;
  std::map<int, size_t> index;
  for (int id = 0; id < static_cast<int>(raw_.size()); ++id) {
    const int r = find(id);
    auto it = index.find(r);
    if (it == index.end()) {
      it = index.emplace(r, out.groups.size()).first;
      Group grp;
      grp.id = static_cast<int>(out.groups.size());
      grp.channels = raw_[r].channels;
      out.groups.push_back(std::move(grp));
    }
    Group& grp = out.groups[it->second];
    if (grp.channels != raw_[id].channels && !grp.blocked) {
      grp.blocked = true;
      grp.reason = "joined layers have different channel counts";
    }
    grp.producers.insert(grp.producers.end(), raw_[id].producers.begin(), raw_[id].producers.end());
    for (ir::Node* dw : raw_[id].depthwise)
      if (std::find(grp.depthwise.begin(), grp.depthwise.end(), dw) == grp.depthwise.end()) grp.depthwise.push_back(dw);
  }
  for (const auto& [id, why] : blocks_) {
    Group& grp = out.groups[index.at(find(id))];
    if (!grp.blocked) grp.reason = why;
    grp.blocked = true;
  }
  auto by_order = [&](const ir::Node* a, const ir::Node* b) { return order_.at(a) < order_.at(b); };
  for (Group& grp : out.groups) {
    std::sort(grp.producers.begin(), grp.producers.end(), by_order);
    std::sort(grp.depthwise.begin(), grp.depthwise.end(), by_order);
  }
  auto remap = [&](std::vector<Segment> segs) {
    for (auto& s : segs)
      if (s.group >= 0) s.group = out.groups[index.at(find(s.group))].id;
    return segs;
  };
  for (SliceSite& s : sites_) {
    s.segments = remap(std::move(s.segments));
    out.sites.push_back(std::move(s));
  }
  for (ir::Value* v : described_) out.values.push_back({v, descs_.at(v).neg_axis, remap(descs_.at(v).segs)});
  for (auto& [n, segs] : group_attrs_) out.group_attrs.emplace_back(n, remap(segs));
  return out;
}

}  // namespace

ChannelAnalysis analyze_channels(ir::Graph& g) { return Analyzer(g).run(); }

}  // namespace mcc::transforms::prune
