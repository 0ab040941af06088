// Executor: runs a model's graph (and subgraphs) in topological order, freeing each value after
// its last use. Each node is placed once, at plan time, on the requested backend when that
// backend supports it and on the cpu otherwise (backends/placement.h); inputs that live on the
// other device are moved before the node runs, initializers are uploaded once, and graph outputs
// come back to the host. Kernels are created once per node, before the first run, so an
// unsupported op fails up front (UnsupportedError naming node, op and opset). Constant nodes are
// evaluated once then and read like initializers (they run again only for an observer or
// keep_all_values). A graph's values live in slots numbered at plan time.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "ir/element_types.h"

namespace mcc::backends {

struct ExecOptions {
  int threads = 0;                 // 0 = all cores (process-wide pool, see ThreadPool)
  const Backend* backend = nullptr;  // requested backend; nullptr = cpu
  bool keep_all_values = false;    // do not free intermediates (per-layer comparison)
  bool profile = false;            // accumulate wall time per node (see Executor::node_times)
  /// Use the fused kernels backends offer (Backend::fuse; the cpu backend fuses a Conv with a
  /// following per-channel Add, BatchNormalization and activation). Never while an observer is
  /// set or keep_all_values is on, since the fused intermediates are not produced.
  bool fuse = true;
  /// Fill the buffers of alloc_output_overwritten with 0xFF bytes instead of leaving them as
  /// they are (NaN for floats), so a kernel that does not write every element shows in tests.
  /// MCC_POISON_OUTPUTS=1 sets it.
  bool poison_overwritten = false;
  /// Kernels keep what they derive from a constant weight (packed GEMM panels, dequantized
  /// MatMulNBits blocks) for the next runs. Off, they derive it on every run and free it after:
  /// slower, but the process holds the model plus one layer's copy instead of two copies of every
  /// weight (calibration and checks of large models, see lean_weight_copies).
  bool keep_weight_copies = true;
};

/// Whether runs of this model that serve a stage (calibration, the self-check) should leave
/// keep_weight_copies off: its initializers hold at least kLeanWeightBytes, where a second copy
/// of its weights would dominate the process's memory (an LLM); small models keep the faster runs.
constexpr int64_t kLeanWeightBytes = 64 << 20;
bool lean_weight_copies(const ir::Model& model);

/// Values visible while a graph runs; subgraph scopes chain to their parent.
struct Scope {
  const Scope* parent = nullptr;
  /// The graph's own values (its inputs and node outputs) by slot; live[s] says whether slot s
  /// holds a value now. slot_of maps a value of the graph to its slot (built once per plan).
  std::vector<RValue> slots;
  std::vector<char> live;
  const std::unordered_map<const ir::Value*, int32_t>* slot_of = nullptr;
  /// Copies of values on the other device (host <-> the requested backend's device).
  std::unordered_map<const ir::Value*, RValue> copies;
  /// The graph's initializers and Constant node values, built once per plan (looked up after
  /// the slots, so a feed that overrides an initializer wins).
  const std::unordered_map<const ir::Value*, RValue>* initializers = nullptr;
  const RValue* find(const ir::Value* v) const;
  /// The value in slot s, or nullptr when s < 0 or the slot is empty.
  const RValue* local(int32_t s) const { return s >= 0 && live[static_cast<size_t>(s)] ? &slots[static_cast<size_t>(s)] : nullptr; }
};

class Executor {
 public:
  explicit Executor(const ir::Model& model, ExecOptions opts = {});

  /// Runs the main graph. Feeds are by graph-input name; inputs backed by an initializer may be
  /// omitted. Returns the graph outputs in order. Wrong or missing feeds throw ModelError.
  std::vector<RValue> run(const std::vector<std::pair<std::string, RValue>>& feeds);

  /// Runs any graph of the model with positional inputs under an outer scope.
  std::vector<RValue> run_graph(const ir::Graph& g, std::vector<RValue> inputs, const Scope* outer);

  /// Called after every node for each of its outputs (per-layer diagnosis, tracing).
  using Observer = std::function<void(const ir::Node&, const ir::Value&, const RValue&)>;
  void set_observer(Observer o) { observer_ = std::move(o); }
  /// Runs of the main graph end after node n (a node of the main graph; nullptr: run it all).
  /// For an observer that needs only the values up to n: outputs not computed by then come
  /// back empty (RValue{}) instead of failing.
  void set_last_node(const ir::Node* n) { last_node_ = n; }

  const ir::Model& model() const { return model_; }
  /// Per-node accumulated wall time in seconds and run count, in first-run order (profile=true).
  struct NodeTime { const ir::Node* node; double seconds; int64_t calls; };
  const std::vector<NodeTime>& node_times() const { return node_times_; }
  /// A zero-filled tensor, reusing a released buffer of the same size when one is pooled.
  /// A host tensor for a kernel output: zero-filled, or with unspecified contents when `zero`
  /// is false (the kernel writes every element; a reused buffer is then not cleared).
  ir::Tensor allocate(ir::DType dt, std::vector<int64_t> dims, bool zero = true);
  /// The requested backend (nodes it does not support run on the cpu).
  const Backend& backend() const { return *backend_; }
  int threads() const;
  const ExecOptions& options() const { return opts_; }

  /// What moving data between devices and falling back cost so far (all runs).
  struct Stats {
    int64_t nodes_on_requested = 0, nodes_on_cpu = 0;  // planned, every graph (per plan, not per run)
    int64_t transfers = 0, transfer_bytes = 0;         // tensors moved at run time
    int64_t initializer_uploads = 0, initializer_bytes = 0;
    double transfer_seconds = 0;
  };
  const Stats& stats() const { return stats_; }
  /// The backend node n was placed on (after the graph holding n was planned).
  const Backend* placement_of(const ir::Node& n) const;

 private:
  const Kernel& kernel_for(const ir::Node& n, const Backend& b);
  void prepare(const ir::Graph& g);
  /// v's value on device `want` (moving it there once per scope; initializers once per executor).
  const RValue* on_device(Scope& scope, const ir::Value* v, const RValue* rv, const ir::Device& want);
  RValue to_host(const RValue& rv);

  const ir::Model& model_;
  ExecOptions opts_;
  const Backend* backend_;
  std::unordered_map<const ir::Node*, Kernel> kernels_;
  std::unordered_map<const ir::Node*, Kernel> fused_kernels_;
  // Per graph, computed once: the kernel of each node, and the values of that graph whose last
  // use is each node (a node whose subgraph captures a value uses it; outputs nobody reads are
  // released right after their producer; graph outputs are never released).
  // With fusion, fused[i] (when set) runs instead of node i and produces fused_out[i]; nodes
  // with skip[i] are done by an earlier fused kernel (their release lists still apply).
  struct GraphPlan {
    std::vector<const Backend*> backends;
    std::vector<std::vector<size_t>> host_inputs;
    std::vector<std::vector<size_t>> shape_only_inputs;
    std::vector<const Kernel*> kernels;
    std::vector<std::vector<const ir::Value*>> release_after;
    // Slots (Scope::slots) of the graph's inputs and node outputs; per node, the slot of each
    // input (-1: an initializer, an outer value or absent), of each output, and of fused_out.
    std::unordered_map<const ir::Value*, int32_t> slot_of;
    std::vector<int32_t> input_slots;
    std::vector<std::vector<int32_t>> in_slots, out_slots;
    std::vector<int32_t> fused_out_slot;
    std::vector<std::vector<int32_t>> fused_in_slots;
    std::vector<std::vector<const RValue*>> fused_in_constants;
    // Per node and input: the initializer's value when the input is an initializer that no
    // graph input overrides (nullptr otherwise).
    std::vector<std::vector<const RValue*>> in_constants;
    // Slot storage kept between runs (taken by a run, given back empty at its end; a nested
    // run of the same graph while it is taken allocates its own).
    std::vector<RValue> spare_slots;
    std::vector<char> spare_live;
    std::vector<std::vector<int32_t>> release_slots;  // release_after's values that have a slot
    // Per node, bit j: input j is in a slot released right after the node and read by no other
    // input of it (KernelContext::consumable_input).
    std::vector<uint64_t> consumable;
    std::vector<const Kernel*> fused;
    std::vector<const ir::Value*> fused_out;
    std::vector<std::vector<const ir::Value*>> fused_in;  // FusedKernel::inputs (empty: the node's)
    std::vector<char> skip;
    // alias_of[i] >= 0: node i repeats node alias_of[i] (duplicate_nodes.h) and takes its outputs.
    std::vector<int64_t> alias_of;
    std::unordered_map<const ir::Value*, RValue> initializers;
    // constant[i]: node i was computed once at plan time (held in `initializers`): a Constant,
    // or, with fusion on the cpu executor, a node whose inputs are all constants
    // (constant_nodes.h); with fusion on it does not run.
    std::vector<char> constant;
  };
  void plan_fusion(const ir::Graph& g, GraphPlan& plan);
  void assign_slots(const ir::Graph& g, GraphPlan& plan);
  void compute_constants(const ir::Graph& g, GraphPlan& plan);
  /// Computes node i of g now when it may be (see GraphPlan::constant); true when it was.
  bool compute_ahead(const ir::Node& n, size_t i, const ir::Graph& g, GraphPlan& plan);
  /// v's plan-time value when it is a constant of g or of an enclosing graph being planned.
  const RValue* planned_constant(const ir::Value* v, const ir::Graph& g, const GraphPlan& plan) const;
  /// The graphs being planned, outermost first (a body is planned after its graph's constants).
  std::vector<std::pair<const ir::Graph*, const GraphPlan*>> preparing_;
  /// Bytes of the values computed ahead so far, at most kAheadBytesLimit (a weight transposed
  /// ahead is a second copy of it: the model keeps the first).
  static constexpr size_t kAheadBytesLimit = size_t{64} << 20;
  size_t ahead_bytes_ = 0;
  std::unordered_map<const ir::Graph*, GraphPlan> plans_;
  std::unique_ptr<ir::ElementTypes> types_;  // plan-time element types (non-cpu backends only)
  std::unordered_map<const ir::Node*, const Backend*> placement_;
  std::unordered_map<const ir::Value*, RValue> device_initializers_;
  Stats stats_;
  Observer observer_;
  const ir::Node* last_node_ = nullptr;
  std::vector<NodeTime> node_times_;
  std::unordered_map<const ir::Node*, size_t> node_time_index_;
  /// Buffers of released intermediates, by byte size (capped in bytes); allocate() takes the
  /// most recently released one that fits (at most twice the size asked for).
  void recycle(RValue& v);
  struct PooledBuffer {
    std::shared_ptr<ir::Buffer> buf;
    uint64_t released = 0;  // release order
  };
  std::map<size_t, std::vector<PooledBuffer>> pool_;
  /// Host buffers of the outputs the last run() handed out: the next run() pools those the caller
  /// has dropped, so a large output (a language model's logits) reuses its memory instead of
  /// fresh pages every run.
  std::vector<std::shared_ptr<ir::Buffer>> handed_out_;
  void pool_buffer(std::shared_ptr<ir::Buffer> buf);
  uint64_t released_ = 0;
  size_t pool_bytes_ = 0;
  std::mutex pool_mutex_;
};

/// The cpu backend (Eigen kernels, always built).
const Backend& cpu_backend();

}  // namespace mcc::backends
