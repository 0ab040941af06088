// Topological execution with tensor lifetimes, subgraph scopes and kernel caching.
#include "backends/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <unordered_set>

#include "backends/constant_nodes.h"
#include "backends/duplicate_nodes.h"
#include "backends/fusion_orphans.h"
#include "backends/placement.h"
#include "backends/thread_pool.h"

namespace mcc::backends {

// ---------------------------------------------------------------- KernelContext

KernelContext::KernelContext(const ir::Node& node, std::vector<const RValue*> inputs, Executor& exec,
                             const Backend& backend)
    : node_(node), inputs_(std::move(inputs)), outputs_(node.outputs.size()), exec_(exec), backend_(backend) {}

KernelContext::KernelContext(const ir::Node& node, std::vector<const RValue*> inputs, std::vector<RValue> outputs,
                             Executor& exec, const Backend& backend)
    : node_(node), inputs_(std::move(inputs)), outputs_(std::move(outputs)), exec_(exec), backend_(backend) {
  outputs_.clear();
  outputs_.resize(node.outputs.size());
}

bool KernelContext::has_input(size_t i) const {
  return i < inputs_.size() && inputs_[i] != nullptr && inputs_[i]->kind != RValue::Kind::None;
}

const ir::Tensor& KernelContext::in(size_t i) const {
  if (i >= inputs_.size() || !inputs_[i])
    throw ModelError(node_.describe() + ": required input " + std::to_string(i) + " is missing");
  if (inputs_[i]->kind != RValue::Kind::Tensor)
    throw ModelError(node_.describe() + ": input " + std::to_string(i) + " must be a tensor");
  return inputs_[i]->tensor;
}

bool KernelContext::wants_output(size_t i) const {
  return i < node_.outputs.size() && node_.outputs[i] != nullptr;
}

ir::Tensor& KernelContext::alloc_output(size_t i, ir::DType dt, std::vector<int64_t> dims) {
  return alloc_output_impl(i, dt, std::move(dims), true);
}

ir::Tensor& KernelContext::alloc_output_overwritten(size_t i, ir::DType dt, std::vector<int64_t> dims) {
  return alloc_output_impl(i, dt, std::move(dims), false);
}

ir::Tensor& KernelContext::alloc_output_impl(size_t i, ir::DType dt, std::vector<int64_t> dims, bool zero) {
  MCC_CHECK(i < outputs_.size(), node_.describe() + ": output index out of range");
  if (backend_.device().is_host()) {
    outputs_[i] = RValue::of(exec_.allocate(dt, std::move(dims), zero));
  } else {
    MCC_CHECK(ir::info(dt).bits > 0, node_.describe() + ": device outputs must have a fixed-width type");
    const size_t bytes = (static_cast<size_t>(ir::checked_numel(dims)) * static_cast<size_t>(ir::info(dt).bits) + 7) / 8;
    outputs_[i] = RValue::of(ir::Tensor::from_buffer(dt, std::move(dims), backend_.allocate(bytes)));
  }
  return outputs_[i].tensor;
}

void KernelContext::set_output(size_t i, ir::Tensor t) {
  MCC_CHECK(i < outputs_.size(), node_.describe() + ": output index out of range");
  outputs_[i] = RValue::of(std::move(t));
}

void KernelContext::set_output_value(size_t i, RValue v) {
  MCC_CHECK(i < outputs_.size(), node_.describe() + ": output index out of range");
  outputs_[i] = std::move(v);
}

int KernelContext::num_threads() const { return exec_.threads(); }

bool KernelContext::keeps_weight_copies() const { return exec_.options().keep_weight_copies; }

bool lean_weight_copies(const ir::Model& model) { return ir::count_initializer_bytes(*model.graph) >= kLeanWeightBytes; }

void KernelContext::parallel_for(int64_t n, int64_t cost, const std::function<void(int64_t, int64_t)>& f) const {
  ThreadPool::instance().parallel_for(n, cost, f);
}

std::vector<RValue> KernelContext::run_subgraph(const ir::Graph& g, std::vector<RValue> inputs) {
  return exec_.run_graph(g, std::move(inputs), static_cast<const Scope*>(scope_));
}

// ---------------------------------------------------------------- Scope

const RValue* Scope::find(const ir::Value* v) const {
  for (const Scope* s = this; s; s = s->parent) {
    if (s->slot_of) {
      auto it = s->slot_of->find(v);
      if (it != s->slot_of->end())
        if (const RValue* rv = s->local(it->second)) return rv;
    }
    if (s->initializers && !s->initializers->empty()) {
      auto ii = s->initializers->find(v);
      if (ii != s->initializers->end()) return &ii->second;
    }
  }
  return nullptr;
}

// ---------------------------------------------------------------- Executor

Executor::Executor(const ir::Model& model, ExecOptions opts)
    : model_(model), opts_(opts), backend_(opts.backend ? opts.backend : &cpu_backend()) {
  if (opts_.threads > 0) ThreadPool::configure(opts_.threads);
  else ThreadPool::instance();
  if (!model_.graph) throw ModelError("model has no graph");
  if (backend_ != &cpu_backend()) types_ = std::make_unique<ir::ElementTypes>(model_);
  // MCC_FUSE=0 turns kernel fusion off (A/B timing and accuracy checks).
  if (const char* f = std::getenv("MCC_FUSE"); f && std::string(f) == "0") opts_.fuse = false;
  if (const char* f = std::getenv("MCC_POISON_OUTPUTS"); f && std::string(f) == "1") opts_.poison_overwritten = true;
  prepare(*model_.graph);
}

namespace {
constexpr size_t kPoolCapBytes = size_t{1} << 30;  // released buffers kept for reuse, at most
constexpr size_t kPoolMinBytes = 64;  // smaller ones are not worth keeping

// The first size() bytes of a pooled buffer that is larger than the tensor it now holds.
class PrefixBuffer final : public ir::Buffer {
 public:
  PrefixBuffer(std::shared_ptr<ir::Buffer> whole, size_t n) : whole_(std::move(whole)), n_(n) {
    device_ = whole_->device();
  }
  const std::byte* data() const override { return whole_->data(); }
  size_t size() const override { return n_; }
  std::byte* mutable_data() override { return whole_->mutable_data(); }
  bool writable() const override { return whole_->writable(); }
  std::shared_ptr<ir::Buffer>& whole() { return whole_; }

 private:
  std::shared_ptr<ir::Buffer> whole_;
  size_t n_;
};
}  // namespace

ir::Tensor Executor::allocate(ir::DType dt, std::vector<int64_t> dims, bool zero) {
  const int bits = ir::info(dt).bits;
  if (bits == 0) return ir::Tensor::allocate(dt, std::move(dims));
  const size_t bytes = (static_cast<size_t>(ir::checked_numel(dims)) * static_cast<size_t>(bits) + 7) / 8;
  std::shared_ptr<ir::Buffer> buf;
  if (bytes >= kPoolMinBytes) {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    // Of the released buffers holding bytes..2 * bytes, the most recently released one: the one
    // most likely still in cache (the next kernel writes it right away). Reusing larger buffers
    // keeps the memory a run touches near its peak of live tensors, so more of it stays cached.
    PooledBuffer* best = nullptr;
    std::vector<PooledBuffer>* best_list = nullptr;
    for (auto it = pool_.lower_bound(bytes); it != pool_.end() && it->first <= 2 * bytes; ++it)
      if (!it->second.empty() && (!best || it->second.back().released > best->released)) {
        best = &it->second.back();
        best_list = &it->second;
      }
    if (best) {
      buf = std::move(best->buf);
      best_list->pop_back();
      pool_bytes_ -= buf->size();
      if (buf->size() != bytes) buf = std::make_shared<PrefixBuffer>(std::move(buf), bytes);
    }
  }
  if (!buf) {
    ir::Tensor t = ir::Tensor::allocate(dt, std::move(dims));
    if (!zero && opts_.poison_overwritten) std::memset(t.mutable_raw(), 0xFF, bytes);
    return t;
  }
  if (zero) std::memset(buf->mutable_data(), 0, bytes);
  else if (opts_.poison_overwritten) std::memset(buf->mutable_data(), 0xFF, bytes);
  return ir::Tensor::from_buffer(dt, std::move(dims), std::move(buf));
}

void Executor::recycle(RValue& v) {
  if (v.kind != RValue::Kind::Tensor) return;
  std::shared_ptr<ir::Buffer> buf = v.tensor.buffer();
  // Only host buffers nothing else holds (not a view shared with another value, not an
  // initializer); device buffers go back to their backend's allocator when dropped.
  if (!buf || buf.use_count() != 2 || !buf->writable() || buf->size() < kPoolMinBytes) return;
  if (!buf->device().is_host()) return;
  if (auto* prefix = dynamic_cast<PrefixBuffer*>(buf.get())) {
    if (prefix->whole().use_count() != 1) return;
    buf = prefix->whole();
  }
  v = RValue{};  // the tensor no longer holds it
  pool_buffer(std::move(buf));
}

void Executor::pool_buffer(std::shared_ptr<ir::Buffer> buf) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (pool_bytes_ + buf->size() > kPoolCapBytes) return;
  pool_bytes_ += buf->size();
  pool_[buf->size()].push_back({std::move(buf), ++released_});  // the map node and vector stay
}

int Executor::threads() const { return ThreadPool::instance().size(); }

void Executor::prepare(const ir::Graph& g) {
  if (plans_.count(&g)) return;
  GraphPlan plan;
  const auto& nodes = g.nodes();
  plan.kernels.resize(nodes.size());
  plan.backends.resize(nodes.size());
  plan.host_inputs.resize(nodes.size());
  plan.shape_only_inputs.resize(nodes.size());
  const std::vector<NodePlacement> placed = types_ ? place_graph(g, *backend_, *types_) : std::vector<NodePlacement>{};
  plan.release_after.resize(nodes.size());
  std::unordered_map<const ir::Value*, size_t> last_use;
  std::vector<const ir::Value*> order;  // first-seen order keeps release lists deterministic
  auto note = [&](const ir::Value* v, size_t i) {
    if (!v || v->owner != &g) return;
    auto [it, fresh] = last_use.emplace(v, i);
    if (fresh) order.push_back(v);
    else it->second = i;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node* n = nodes[i];
    const Backend* b = placed.empty() ? &cpu_backend() : placed[i].backend;
    (b == &cpu_backend() ? stats_.nodes_on_cpu : stats_.nodes_on_requested) += 1;
    placement_[n] = b;
    plan.backends[i] = b;
    plan.host_inputs[i] = b->host_inputs(*n);
    plan.shape_only_inputs[i] = b->shape_only_inputs(*n);
    plan.kernels[i] = &kernel_for(*n, *b);
    for (const ir::Value* v : n->inputs) note(v, i);
    const std::vector<ir::Graph*> subs = n->subgraphs();
    std::unordered_set<const ir::Value*> caps;
    for (const ir::Graph* s : subs) ir::captured_values(*s, g, caps);
    std::vector<const ir::Value*> sorted_caps(caps.begin(), caps.end());
    std::sort(sorted_caps.begin(), sorted_caps.end(), [](const ir::Value* a, const ir::Value* b) { return a->name < b->name; });
    for (const ir::Value* v : sorted_caps) note(v, i);
    for (const ir::Value* o : n->outputs) note(o, i);  // an output nobody reads dies here
  }
  for (const ir::Value* v : g.initializers) plan.initializers.emplace(v, RValue::of(*v->initializer));
  compute_constants(g, plan);
  // Bodies after this graph's constants, so a body can compute ahead what depends only on them.
  preparing_.push_back({&g, &plan});
  for (const ir::Node* n : nodes)
    for (const ir::Graph* s : n->subgraphs()) prepare(*s);
  preparing_.pop_back();
  plan_fusion(g, plan);
  // A fused kernel that reads other values than its node's inputs keeps them alive until it runs.
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const ir::Value* v : plan.fused_in[i])
      if (v && v->owner == &g) last_use[v] = std::max(last_use.at(v), i);
  // Nodes that repeat an earlier one take its outputs, which then live until the repeat.
  plan.alias_of.assign(nodes.size(), -1);
  if (opts_.fuse) {
    std::unordered_map<std::string, size_t> first;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (plan.skip[i] || plan.fused[i] || plan.constant[i]) continue;  // outputs not (all) materialised as the node's
      std::string key = duplicate_key(*nodes[i]);
      if (key.empty()) continue;
      auto [it, fresh] = first.emplace(std::move(key), i);
      if (fresh) continue;
      plan.alias_of[i] = static_cast<int64_t>(it->second);
      for (const ir::Value* o : nodes[it->second]->outputs)
        if (o) last_use[o] = std::max(last_use[o], i);
    }
  }
  const std::unordered_set<const ir::Value*> keep(g.outputs.begin(), g.outputs.end());
  for (const ir::Value* v : order)
    if (!keep.count(v)) plan.release_after[last_use.at(v)].push_back(v);
  assign_slots(g, plan);
  plans_.emplace(&g, std::move(plan));
}

const RValue* Executor::planned_constant(const ir::Value* v, const ir::Graph& g, const GraphPlan& plan) const {
  if (!v) return nullptr;
  auto lookup = [v](const ir::Graph& owner, const GraphPlan& p) -> const RValue* {
    if (std::find(owner.inputs.begin(), owner.inputs.end(), v) != owner.inputs.end()) return nullptr;  // may be fed
    auto it = p.initializers.find(v);
    return it == p.initializers.end() ? nullptr : &it->second;
  };
  if (v->owner == &g) return lookup(g, plan);
  for (auto it = preparing_.rbegin(); it != preparing_.rend(); ++it)
    if (v->owner == it->first) return lookup(*it->first, *it->second);
  return nullptr;
}

bool Executor::compute_ahead(const ir::Node& n, size_t i, const ir::Graph& g, GraphPlan& plan) {
  const bool constant_node = n.is("Constant") && n.inputs.empty();
  if (!constant_node) {
    // Only on the cpu executor with fusion on: elsewhere (MCC_FUSE=0, other backends) the graph
    // runs as written.
    if (!opts_.fuse || backend_ != &cpu_backend() || !computable_ahead(n)) return false;
    bool any = false;
    for (const ir::Value* v : n.inputs) {
      if (!v) continue;
      if (!planned_constant(v, g, plan)) return false;
      any = true;
    }
    if (!any) return false;
    for (const ir::Value* o : n.outputs)
      if (o && !o->type_passthrough.bytes.empty()) return false;  // declared non-tensor output
    const size_t predicted = predicted_output_bytes(n, [&](size_t k) -> const ir::Tensor* {
      const RValue* rv = planned_constant(n.inputs[k], g, plan);
      return rv && rv->kind == RValue::Kind::Tensor ? &rv->tensor : nullptr;
    });
    if (predicted > kAheadBytesLimit || ahead_bytes_ + predicted > kAheadBytesLimit) return false;
  }
  std::vector<const RValue*> ins;
  for (const ir::Value* v : n.inputs) ins.push_back(planned_constant(v, g, plan));
  KernelContext ctx(n, std::move(ins), *this, cpu_backend());
  try {
    const ThreadPool::InlineScope one_thread;  // a split here would start the pool's workers
    (*plan.kernels[i])(ctx);
  } catch (Error& e) {
    if (!constant_node) return false;  // computed at run time instead, where its error shows
    if (std::string(e.what()).find(n.describe()) == std::string::npos) e.add_context(n.describe());
    throw;
  } catch (const std::bad_alloc&) {
    if (!constant_node) return false;
    throw;
  }
  size_t bytes = 0;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (!n.outputs[k]) continue;
    const RValue& rv = ctx.outputs()[k];
    if (constant_node && !rv.defined()) throw InternalError(n.describe() + ": kernel did not produce output 0");
    if (rv.kind != RValue::Kind::Tensor || !rv.tensor.defined()) return false;
    bytes += rv.tensor.nbytes();
  }
  if (!constant_node) {
    if (ahead_bytes_ + bytes > kAheadBytesLimit) return false;
    ahead_bytes_ += bytes;
  }
  for (size_t k = 0; k < n.outputs.size(); ++k)
    if (n.outputs[k]) plan.initializers.emplace(n.outputs[k], std::move(ctx.outputs()[k]));
  return true;
}

void Executor::compute_constants(const ir::Graph& g, GraphPlan& plan) {
  const auto& nodes = g.nodes();
  plan.constant.assign(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node* n = nodes[i];
    if (plan.backends[i] != &cpu_backend() || n->outputs.empty()) continue;
    bool taken = false;  // an output already has a value (an initializer of the same name)
    for (const ir::Value* o : n->outputs) taken = taken || (o && plan.initializers.count(o));
    if (!taken && compute_ahead(*n, i, g, plan)) plan.constant[i] = 1;
  }
  // Values that only nodes computed ahead read are not kept (their readers' results are).
  if (std::find(plan.constant.begin(), plan.constant.end(), 1) == plan.constant.end()) return;
  std::unordered_set<const ir::Value*> keep(g.outputs.begin(), g.outputs.end());
  for (const ir::Node* n : nodes)
    for (const ir::Graph* s : n->subgraphs()) ir::captured_values(*s, g, keep);
  std::unordered_map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i], i);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!plan.constant[i]) continue;
    for (const ir::Value* o : nodes[i]->outputs) {
      if (!o || keep.count(o) || o->uses.empty()) continue;
      bool only_ahead = true;
      for (const ir::Use& u : o->uses) {
        auto it = index.find(u.user);
        only_ahead = only_ahead && it != index.end() && plan.constant[it->second];
      }
      if (only_ahead) plan.initializers.erase(o);
    }
  }
}

void Executor::assign_slots(const ir::Graph& g, GraphPlan& plan) {
  auto slot = [&](const ir::Value* v) {
    auto [it, fresh] = plan.slot_of.emplace(v, static_cast<int32_t>(plan.slot_of.size()));
    return it->second;
  };
  for (const ir::Value* v : g.inputs) plan.input_slots.push_back(slot(v));
  const auto& nodes = g.nodes();
  for (const ir::Node* n : nodes)
    for (const ir::Value* o : n->outputs)
      if (o) slot(o);
  auto find = [&](const ir::Value* v) -> int32_t {
    if (!v) return -1;
    auto it = plan.slot_of.find(v);
    return it == plan.slot_of.end() ? -1 : it->second;
  };
  plan.in_slots.resize(nodes.size());
  plan.out_slots.resize(nodes.size());
  plan.release_slots.resize(nodes.size());
  plan.fused_out_slot.assign(nodes.size(), -1);
  plan.in_constants.resize(nodes.size());
  plan.fused_in_slots.resize(nodes.size());
  plan.fused_in_constants.resize(nodes.size());
  // The initializer or Constant value read for v, when no graph input holds it (a graph input's
  // slot comes first: a feed overrides an initializer). A Constant node's output has a slot too,
  // filled only when the node runs (fusion off), so the slot is looked at first at run time.
  auto constant = [&](const ir::Value* v) -> const RValue* {
    if (!v || v->owner != &g || std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end()) return nullptr;
    auto it = plan.initializers.find(v);
    return it == plan.initializers.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const ir::Value* v : plan.fused_in[i]) {
      plan.fused_in_slots[i].push_back(find(v));
      plan.fused_in_constants[i].push_back(constant(v));
    }
    for (const ir::Value* v : nodes[i]->inputs) {
      plan.in_slots[i].push_back(find(v));
      plan.in_constants[i].push_back(constant(v));
    }
    for (const ir::Value* o : nodes[i]->outputs) plan.out_slots[i].push_back(find(o));
    plan.fused_out_slot[i] = plan.fused[i] ? find(plan.fused_out[i]) : -1;
    for (const ir::Value* v : plan.release_after[i])
      if (int32_t s = find(v); s >= 0) plan.release_slots[i].push_back(s);
    uint64_t bits = 0;
    const auto& ins = nodes[i]->inputs;
    for (size_t j = 0; j < ins.size() && j < 64; ++j) {
      const int32_t s = plan.in_slots[i][j];
      const auto& rel = plan.release_slots[i];
      if (s >= 0 && std::count(ins.begin(), ins.end(), ins[j]) == 1 && std::find(rel.begin(), rel.end(), s) != rel.end())
        bits |= uint64_t{1} << j;
    }
    plan.consumable.push_back(bits);
  }
}

void Executor::plan_fusion(const ir::Graph& g, GraphPlan& plan) {
  const auto& nodes = g.nodes();
  plan.fused.assign(nodes.size(), nullptr);
  plan.fused_out.assign(nodes.size(), nullptr);
  plan.fused_in.assign(nodes.size(), {});
  plan.skip.assign(nodes.size(), 0);
  if (!opts_.fuse) return;
  std::unordered_map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i], i);
  std::unordered_set<const ir::Value*> fused_outs;  // of the fused kernels so far
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (plan.skip[i]) continue;
    auto fk = plan.backends[i]->fuse(*nodes[i]);
    if (!fk) continue;
    bool ok = true;  // every absorbed node later in this graph, on the same backend, not absorbed already
    for (const ir::Node* a : fk->absorbed) {
      auto it = index.find(a);
      ok = ok && it != index.end() && it->second > i && !plan.skip[it->second] &&
           plan.backends[it->second] == plan.backends[i];
    }
    // Every value the kernel reads instead of the node's inputs exists when it runs: the output
    // of an earlier fused kernel, made by an earlier node that runs, or not made by a node of
    // this graph.
    for (const ir::Value* v : fk->inputs) {
      if (!ok || !v || !v->producer || v->producer->owner != &g || fused_outs.count(v)) continue;
      auto it = index.find(v->producer);
      ok = it != index.end() && it->second < i && !plan.fused[it->second] && !plan.skip[it->second];
    }
    if (!ok) continue;
    for (const ir::Node* a : fk->absorbed) plan.skip[index.at(a)] = 1;
    plan.fused_out[i] = fk->output;
    plan.fused_in[i] = fk->inputs;
    plan.fused[i] = &fused_kernels_.emplace(nodes[i], std::move(fk->kernel)).first->second;
    fused_outs.insert(fk->output);
  }
  std::vector<char> fused(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) fused[i] = plan.fused[i] != nullptr;
  skip_fusion_orphans(g, fused, plan.fused_in, plan.constant, plan.skip);
}

const Backend* Executor::placement_of(const ir::Node& n) const {
  auto it = placement_.find(&n);
  return it == placement_.end() ? nullptr : it->second;
}

const Kernel& Executor::kernel_for(const ir::Node& n, const Backend& b) {
  auto it = kernels_.find(&n);
  if (it != kernels_.end()) return it->second;
  Kernel k;
  try {
    k = b.create_kernel(n);
  } catch (Error& e) {
    if (e.message().find(n.describe()) == std::string::npos) e.add_context(n.describe());
    throw;
  }
  return kernels_.emplace(&n, std::move(k)).first->second;
}

std::vector<RValue> Executor::run(const std::vector<std::pair<std::string, RValue>>& feeds) {
  const ir::Graph& g = *model_.graph;
  std::vector<RValue> inputs;
  inputs.reserve(g.inputs.size());
  for (const ir::Value* in : g.inputs) {
    auto it = std::find_if(feeds.begin(), feeds.end(), [&](const auto& f) { return f.first == in->name; });
    if (it == feeds.end()) {
      if (in->initializer) { inputs.push_back(RValue::of(*in->initializer)); continue; }
      throw ModelError("no data for graph input '" + in->name + "'");
    }
    const RValue& rv = it->second;
    if (rv.kind == RValue::Kind::Tensor && in->has_type && in->type_passthrough.bytes.empty()) {
      if (in->dtype != ir::DType::Undefined && rv.tensor.dtype() != in->dtype)
        throw ModelError("input '" + in->name + "' has dtype " + ir::dtype_name(rv.tensor.dtype()) +
                         ", the model expects " + ir::dtype_name(in->dtype));
      if (in->shape.dims) {
        const auto& dims = *in->shape.dims;
        const auto& got = rv.tensor.dims();
        bool ok = dims.size() == got.size();
        for (size_t i = 0; ok && i < dims.size(); ++i)
          if (dims[i].value && *dims[i].value >= 0 && *dims[i].value != got[i]) ok = false;  // -1: unknown
        if (!ok) {
          std::string want, have;
          for (const auto& d : dims) want += (want.empty() ? "" : "x") + (d.value ? std::to_string(*d.value) : (d.param.empty() ? "?" : d.param));
          for (int64_t d : got) have += (have.empty() ? "" : "x") + std::to_string(d);
          throw ModelError("input '" + in->name + "' has shape [" + have + "], the model expects [" + want + "]");
        }
      }
    }
    inputs.push_back(rv);
  }
  for (const auto& f : feeds)
    if (!g.find_value(f.first) || std::find(g.inputs.begin(), g.inputs.end(), g.find_value(f.first)) == g.inputs.end())
      throw ModelError("data given for '" + f.first + "', which is not a graph input");
  for (auto& buf : handed_out_)
    if (buf.use_count() == 1) pool_buffer(std::move(buf));  // the caller dropped that output
  handed_out_.clear();
  std::vector<RValue> outputs = run_graph(g, std::move(inputs), nullptr);
  for (const RValue& v : outputs) {
    // On another backend, outputs come back in that backend's own host buffers (page-locked).
    if (v.kind != RValue::Kind::Tensor || backend_ != &cpu_backend()) continue;
    const std::shared_ptr<ir::Buffer>& buf = v.tensor.buffer();
    if (buf && buf->writable() && buf->device().is_host() && buf->size() >= kPoolMinBytes &&
        !dynamic_cast<PrefixBuffer*>(buf.get()))
      handed_out_.push_back(buf);
  }
  return outputs;
}

std::vector<RValue> Executor::run_graph(const ir::Graph& g, std::vector<RValue> inputs, const Scope* outer) {
  prepare(g);
  GraphPlan& plan = plans_.at(&g);
  Scope scope;
  scope.parent = outer;
  if (inputs.size() != g.inputs.size())
    throw ModelError("graph '" + g.name + "' takes " + std::to_string(g.inputs.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  scope.initializers = &plan.initializers;
  scope.slot_of = &plan.slot_of;
  // The slot storage of the previous run, when no other run of this graph holds it; every slot
  // is emptied again when this run ends (normally or by an exception).
  scope.slots.swap(plan.spare_slots);
  scope.live.swap(plan.spare_live);
  scope.slots.resize(plan.slot_of.size());
  scope.live.assign(plan.slot_of.size(), 0);
  struct GiveBack {
    Scope& scope;
    GraphPlan& plan;
    ~GiveBack() {
      for (size_t k = 0; k < scope.live.size(); ++k)
        if (scope.live[k]) scope.slots[k] = RValue{};
      scope.slots.swap(plan.spare_slots);
      scope.live.swap(plan.spare_live);
    }
  } give_back{scope, plan};
  auto put = [&](int32_t s, RValue v) {
    scope.slots[static_cast<size_t>(s)] = std::move(v);
    scope.live[static_cast<size_t>(s)] = 1;
  };
  for (size_t i = 0; i < inputs.size(); ++i) put(plan.input_slots[i], std::move(inputs[i]));

  const auto& nodes = g.nodes();
  const bool fuse = !observer_ && !opts_.keep_all_values;
  auto release = [&](size_t ni) {
    if (opts_.keep_all_values) return;
    if (!scope.copies.empty())
      for (const ir::Value* v : plan.release_after[ni]) scope.copies.erase(v);
    for (int32_t s : plan.release_slots[ni]) {
      const size_t k = static_cast<size_t>(s);
      if (!scope.live[k]) continue;
      recycle(scope.slots[k]);
      scope.slots[k] = RValue{};
      scope.live[k] = 0;
    }
  };
  // Reused from node to node (no allocation per node once they have grown).
  std::vector<const RValue*> ins;
  std::vector<RValue> outs_buf;
  for (size_t ni = 0; ni < nodes.size(); ++ni) {
    const ir::Node* n = nodes[ni];
    if (fuse && (plan.skip[ni] || plan.constant[ni])) {
      release(ni);
      continue;
    }
    if (fuse && plan.alias_of[ni] >= 0) {  // a repeat: the earlier node's values (shared buffers)
      const auto& src = plan.out_slots[static_cast<size_t>(plan.alias_of[ni])];
      for (size_t k = 0; k < n->outputs.size(); ++k) {
        if (!n->outputs[k]) continue;
        const RValue* rv = scope.local(src[k]);
        if (!rv) throw InternalError(n->describe() + ": the node it repeats left no output " + std::to_string(k));
        put(plan.out_slots[ni][k], *rv);
      }
      release(ni);
      continue;
    }
    const Kernel& kernel = fuse && plan.fused[ni] ? *plan.fused[ni] : *plan.kernels[ni];
    const Backend& nb = *plan.backends[ni];
    const auto& hi = plan.host_inputs[ni];
    const auto& so = plan.shape_only_inputs[ni];
    // A fused kernel may read other values than the node's inputs (FusedKernel::inputs).
    const bool own_inputs = fuse && plan.fused[ni] && !plan.fused_in[ni].empty();
    const size_t n_in = own_inputs ? plan.fused_in[ni].size() : n->inputs.size();
    const auto& in_slots = own_inputs ? plan.fused_in_slots[ni] : plan.in_slots[ni];
    const auto& in_consts = own_inputs ? plan.fused_in_constants[ni] : plan.in_constants[ni];
    ins.clear();
    for (size_t j = 0; j < n_in; ++j) {
      const ir::Value* v = own_inputs ? plan.fused_in[ni][j] : n->inputs[j];
      if (!v) { ins.push_back(nullptr); continue; }
      const RValue* rv = scope.local(in_slots[j]);
      if (!rv) rv = in_consts[j];
      if (!rv) rv = scope.find(v);
      if (!rv) throw ModelError(n->describe() + ": input '" + v->name + "' has no value (undefined or not yet computed)");
      if (!so.empty() && std::find(so.begin(), so.end(), j) != so.end()) {
        ins.push_back(rv);  // only its dims are read: wherever it lives
        continue;
      }
      const bool want_host = !hi.empty() && std::find(hi.begin(), hi.end(), j) != hi.end();
      ins.push_back(on_device(scope, v, rv, want_host ? ir::Device{} : nb.device()));
    }
    KernelContext ctx(*n, std::move(ins), std::move(outs_buf), *this, nb);
    ctx.scope_ = &scope;
    if (!own_inputs && !opts_.keep_all_values) ctx.consumable_ = plan.consumable[ni];
    try {
      if (opts_.profile) {
        const auto t0 = std::chrono::steady_clock::now();
        kernel(ctx);
        if (!nb.device().is_host()) nb.synchronize();
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        auto [it, fresh] = node_time_index_.emplace(n, node_times_.size());
        if (fresh) node_times_.push_back(NodeTime{n, 0.0, 0});
        node_times_[it->second].seconds += sec;
        ++node_times_[it->second].calls;
      } else {
        kernel(ctx);
      }
    } catch (Error& e) {
      if (std::string(e.what()).find(n->describe()) == std::string::npos) e.add_context(n->describe());
      throw;
    } catch (const std::bad_alloc&) {
      throw BackendError(n->describe() + ": out of memory");
    }
    auto& outs = ctx.outputs();
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      const ir::Value* o = i == 0 && fuse && plan.fused[ni] ? plan.fused_out[ni] : n->outputs[i];
      if (!o) continue;
      if (!outs[i].defined())
        throw InternalError(n->describe() + ": kernel did not produce output " + std::to_string(i));
      if (observer_) observer_(*n, *o, to_host(outs[i]));
      put(i == 0 && fuse && plan.fused[ni] ? plan.fused_out_slot[ni] : plan.out_slots[ni][i], std::move(outs[i]));
    }
    ins = ctx.take_inputs();
    outs_buf = std::move(outs);
    release(ni);
    if (n == last_node_ && !outer) break;
  }
  const bool cut_short = last_node_ && !outer;
  std::vector<RValue> out;
  out.reserve(g.outputs.size());
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const ir::Value* v = g.outputs[k];
    const RValue* rv = scope.find(v);
    if (!rv && cut_short) {
      out.emplace_back();
      continue;
    }
    if (!rv) throw ModelError("graph output '" + v->name + "' was not computed");
    // A sequence in this run's own slot is moved out at its last mention (the slots are emptied
    // when the run ends): a Loop's carried sequence is not copied once per iteration.
    auto slot = plan.slot_of.find(v);
    const bool last = std::find(g.outputs.begin() + static_cast<std::ptrdiff_t>(k) + 1, g.outputs.end(), v) == g.outputs.end();
    if (rv->kind == RValue::Kind::Sequence && last && slot != plan.slot_of.end() && scope.local(slot->second) == rv) {
      out.push_back(std::move(scope.slots[static_cast<size_t>(slot->second)]));
      continue;
    }
    out.push_back(to_host(*rv));
  }
  return out;
}

const RValue* Executor::on_device(Scope& scope, const ir::Value* v, const RValue* rv, const ir::Device& want) {
  if (rv->kind != RValue::Kind::Tensor || !rv->tensor.defined() || rv->tensor.device() == want) return rv;
  // Initializers (not overridden by a feed) are uploaded once and kept for later runs.
  const bool initializer = !want.is_host() && v->initializer && rv->tensor.buffer() == v->initializer->buffer();
  if (initializer) {
    auto it = device_initializers_.find(v);
    if (it != device_initializers_.end()) return &it->second;
  } else {
    auto it = scope.copies.find(v);
    if (it != scope.copies.end() && it->second.tensor.device() == want) return &it->second;
  }
  const auto t0 = std::chrono::steady_clock::now();
  RValue moved = want.is_host() ? RValue::of(backend_->download(rv->tensor)) : RValue::of(backend_->upload(rv->tensor));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats_.transfer_seconds += sec;
  const auto bytes = static_cast<int64_t>(rv->tensor.nbytes());
  if (initializer) {
    ++stats_.initializer_uploads;
    stats_.initializer_bytes += bytes;
    return &device_initializers_.insert_or_assign(v, std::move(moved)).first->second;
  }
  ++stats_.transfers;
  stats_.transfer_bytes += bytes;
  return &scope.copies.insert_or_assign(v, std::move(moved)).first->second;
}

RValue Executor::to_host(const RValue& rv) {
  if (rv.kind != RValue::Kind::Tensor || !rv.tensor.defined() || rv.tensor.device().is_host()) return rv;
  const auto t0 = std::chrono::steady_clock::now();
  RValue out = RValue::of(backend_->download(rv.tensor));
  stats_.transfer_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++stats_.transfers;
  stats_.transfer_bytes += static_cast<int64_t>(rv.tensor.nbytes());
  return out;
}

}  // namespace mcc::backends
