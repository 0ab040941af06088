// Backend interface, runtime values and the kernel calling convention shared by every backend.
// A kernel factory is called once per node (attributes parsed once, as ORT's kernel
// constructors do) and returns a callable that runs the node on given inputs.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace mcc::backends {

class Executor;

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
  KernelContext(const ir::Node& node, std::vector<const RValue*> inputs, Executor& exec);

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
  /// Allocates output i (zero-filled, possibly a reused buffer) and returns it for writing.
  ir::Tensor& alloc_output(size_t i, ir::DType dt, std::vector<int64_t> dims);
  /// Sets output i to an existing tensor (e.g. a reshaped view of an input; no copy).
  void set_output(size_t i, ir::Tensor t);
  void set_output_value(size_t i, RValue v);
  std::vector<RValue>& outputs() { return outputs_; }

  Executor& executor() { return exec_; }
  /// Number of threads of the process-wide pool.
  int num_threads() const;
  /// Runs f(begin, end) over [0, n) split into static chunks across the pool (deterministic
  /// partitioning for a fixed thread count). cost_per_item (rough ops) decides whether to split.
  void parallel_for(int64_t n, int64_t cost_per_item, const std::function<void(int64_t, int64_t)>& f) const;
  /// Runs a subgraph (If/Loop/Scan body) with the given inputs; outer-scope values it captures
  /// are resolved from the scope that is executing this node.
  std::vector<RValue> run_subgraph(const ir::Graph& g, std::vector<RValue> inputs);

  /// Scope of the enclosing execution (set by the executor).
  void* scope_ = nullptr;

 private:
  const ir::Node& node_;
  std::vector<const RValue*> inputs_;
  std::vector<RValue> outputs_;
  Executor& exec_;
};

using Kernel = std::function<void(KernelContext&)>;
/// Called once per node; validates attributes (ModelError/UnsupportedError naming the node).
using KernelFactory = std::function<Kernel(const ir::Node&)>;

/// Wraps a stateless function as a factory.
inline KernelFactory stateless(void (*f)(KernelContext&)) {
  return [f](const ir::Node&) { return Kernel(f); };
}

/// A backend executes nodes. The executor asks `supports` per node and falls back to cpu.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual bool supports(const ir::Node& n) const = 0;
  /// Throws UnsupportedError naming node, op and opset when there is no kernel.
  virtual Kernel create_kernel(const ir::Node& n) const = 0;
};

}  // namespace mcc::backends
