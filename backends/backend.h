// Backend interface, runtime values and the kernel calling convention shared by every backend.
// A kernel factory is called once per node (attributes parsed once, as ORT's kernel
// constructors do) and returns a callable that runs the node on given inputs.
//
// A backend owns a device (the cpu backend: the host). It says per node and input element types
// whether it runs the node, allocates memory on its device, moves tensors between its device and
// the host, and may offer fused kernels for chains of nodes. The executor decides placement and
// transfers at plan time (backends/placement.h); kernels only ever see tensors on their device.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace mcc::backends {

class Executor;
class Backend;

/// A runtime value: a tensor, a sequence of tensors, or an empty optional.
struct RValue {
  enum class Kind { Tensor, Sequence, None };
  Kind kind = Kind::Tensor;
  ir::Tensor tensor;              // Kind::Tensor
  std::vector<ir::Tensor> seq;    // Kind::Sequence
  static RValue of(ir::Tensor t) { RValue r; r.tensor = std::move(t); return r; }
  static RValue sequence(std::vector<ir::Tensor> s) { RValue r; r.kind = Kind::Sequence; r.seq = std::move(s); return r; }
  static RValue none() { RValue r; r.kind = Kind::None; return r; }
  bool defined() const { return kind != Kind::Tensor || tensor.defined(); }
};

/// What a kernel sees while it runs one node.
class KernelContext {
 public:
  KernelContext(const ir::Node& node, std::vector<const RValue*> inputs, Executor& exec,
                const Backend& backend);
  /// As above, with `outputs` as the storage for the outputs (cleared and sized here): the
  /// executor hands the same vectors from node to node instead of allocating new ones.
  KernelContext(const ir::Node& node, std::vector<const RValue*> inputs, std::vector<RValue> outputs,
                Executor& exec, const Backend& backend);
  /// The input vector, given back for reuse (the context has no inputs afterwards).
  std::vector<const RValue*> take_inputs() { return std::move(inputs_); }

  const ir::Node& node() const { return node_; }
  size_t num_inputs() const { return inputs_.size(); }
  /// True when input i is present (not omitted, not an empty optional).
  bool has_input(size_t i) const;
  /// Input i as a tensor; throws ModelError naming the node when it is missing or not a tensor.
  const ir::Tensor& in(size_t i) const;
  /// Input i as a runtime value (sequences, optionals); nullptr when omitted.
  const RValue* in_value(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }

  size_t num_outputs() const { return outputs_.size(); }
  /// True when output i is requested (present in the node, not "").
  bool wants_output(size_t i) const;
  /// Allocates output i on the node's device and returns it for writing: zero-filled host memory
  /// (possibly a reused buffer) for host backends, uninitialised device memory otherwise.
  ir::Tensor& alloc_output(size_t i, ir::DType dt, std::vector<int64_t> dims);
  /// As alloc_output, for a kernel that writes every element of the output: a reused host
  /// buffer is not cleared first (its contents are unspecified until the kernel writes them).
  ir::Tensor& alloc_output_overwritten(size_t i, ir::DType dt, std::vector<int64_t> dims);
  /// Sets output i to an existing tensor (e.g. a reshaped view of an input; no copy).
  void set_output(size_t i, ir::Tensor t);
  void set_output_value(size_t i, RValue v);
  std::vector<RValue>& outputs() { return outputs_; }

  Executor& executor() { return exec_; }
  /// The backend this node runs on; alloc_output allocates on its device.
  const Backend& backend() const { return backend_; }
  /// Number of threads of the process-wide pool.
  int num_threads() const;
  /// Whether kernels keep copies derived from constant weights between runs
  /// (ExecOptions::keep_weight_copies).
  bool keeps_weight_copies() const;
  /// Runs f(begin, end) over [0, n) split into static chunks across the pool (deterministic
  /// partitioning for a fixed thread count). cost_per_item (rough ops) decides whether to split.
  void parallel_for(int64_t n, int64_t cost_per_item, const std::function<void(int64_t, int64_t)>& f) const;
  /// Runs a subgraph (If/Loop/Scan body) with the given inputs; outer-scope values it captures
  /// are resolved from the scope that is executing this node.
  std::vector<RValue> run_subgraph(const ir::Graph& g, std::vector<RValue> inputs);

  /// Scope of the enclosing execution (set by the executor).
  void* scope_ = nullptr;
  /// Input i's value to take apart instead of copying (a sequence to extend), when nothing reads
  /// it after this node: the executor releases it once the node has run. nullptr otherwise.
  RValue* consumable_input(size_t i) const {
    return i < 64 && (consumable_ >> i & 1) ? const_cast<RValue*>(inputs_[i]) : nullptr;
  }
  /// Bit i: input i may be taken apart (set by the executor).
  uint64_t consumable_ = 0;

 private:
  ir::Tensor& alloc_output_impl(size_t i, ir::DType dt, std::vector<int64_t> dims, bool zero);
  const ir::Node& node_;
  std::vector<const RValue*> inputs_;
  std::vector<RValue> outputs_;
  Executor& exec_;
  const Backend& backend_;
};

using Kernel = std::function<void(KernelContext&)>;
/// Called once per node; validates attributes (ModelError/UnsupportedError naming the node).
using KernelFactory = std::function<Kernel(const ir::Node&)>;

/// Wraps a stateless function as a factory.
inline KernelFactory stateless(void (*f)(KernelContext&)) {
  return [f](const ir::Node&) { return Kernel(f); };
}

/// A fused kernel and the nodes it stands for (a backend's answer to Backend::fuse).
struct FusedKernel {
  Kernel kernel;                          // runs at the first node's position, as that node
  std::vector<const ir::Node*> absorbed;  // later nodes whose work the kernel does (skipped)
  const ir::Value* output = nullptr;      // the value the kernel's output 0 is
  /// The values the kernel reads as its inputs; empty: the first node's inputs. The executor
  /// keeps them alive until the kernel has run.
  std::vector<const ir::Value*> inputs;
};

/// Whether a backend runs a node, and why not.
struct Support {
  bool ok = true;
  std::string reason;  // set when !ok: "op X has no kernel", "input 0 is int64", ...
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

/// A backend executes nodes on one device. The executor asks `supports` per node and places the
/// node on the cpu backend when the answer is no.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// The device its kernels read and write.
  virtual ir::Device device() const { return {}; }
  /// Empty when the backend can run in this process; otherwise one line saying why not
  /// ("no CUDA device was found"). Placement can still be planned for an unavailable backend.
  virtual std::string unavailable_reason() const { return {}; }
  /// Whether it runs `n` when its inputs have these element types (Undefined: not known at plan
  /// time; a backend that needs to know says no).
  virtual Support supports(const ir::Node& n, std::span<const ir::DType> input_dtypes) const = 0;
  /// Throws UnsupportedError naming node, op and opset when there is no kernel.
  virtual Kernel create_kernel(const ir::Node& n) const = 0;
  /// A kernel for `n` and nodes after it, or nullopt. The executor uses it only when every
  /// absorbed node is placed on this backend and nothing else reads the absorbed intermediates.
  virtual std::optional<FusedKernel> fuse(const ir::Node& n) const { return std::nullopt; }

  /// Inputs the kernel reads from host memory wherever the node runs (shape and index tensors a
  /// device kernel needs before it launches, as ORT's "CPU input" memory type). The executor
  /// hands those inputs over as host tensors.
  virtual std::vector<size_t> host_inputs(const ir::Node& n) const { return {}; }
  /// Inputs whose bytes the kernel never reads, only their type and dims (Shape, Size): they are
  /// handed over wherever they live, without a transfer.
  virtual std::vector<size_t> shape_only_inputs(const ir::Node& n) const { return {}; }

  /// Memory on the device for `bytes` bytes (host backends: zero-filled host memory).
  virtual std::shared_ptr<ir::Buffer> allocate(size_t bytes) const;
  /// A copy of a host tensor on this backend's device (host backends: the tensor itself).
  virtual ir::Tensor upload(const ir::Tensor& host) const;
  /// A host copy of a tensor on this backend's device (host backends: the tensor itself).
  virtual ir::Tensor download(const ir::Tensor& dev) const;
  /// Waits until every kernel queued on the device has finished (no-op on the host).
  virtual void synchronize() const {}
};

}  // namespace mcc::backends
