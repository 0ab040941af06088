// The cuda backend's kernels: (op type, opset range) -> factory and a check of the input element
// types at plan time. Each op family registers from its own file in ops/ through a
// register_<family>() call listed in register_all() (explicit calls, no static registrars).
// Only ai.onnx ops; anything not here falls back to the cpu per node.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"

namespace mcc::backends::cuda {

/// Empty when the kernel handles this node with these input element types, else the reason it
/// does not ("input 0 is int8", "auto_pad SAME_LOWER"). Undefined means unknown at plan time.
/// Every attribute or input combination a kernel does not handle is declined here, at plan time
/// (the node then runs on the cpu); a kernel never throws UnsupportedError at run time.
using NodeCheck = std::function<std::string(const ir::Node&, std::span<const ir::DType>)>;

class OpTable {
 public:
  /// Registers op versions [since_min, since_max] (since_max = 0: no upper bound). `host_inputs`:
  /// inputs the kernel reads on the host (shapes, axes, pads, scales: see Backend::host_inputs).
  void add(std::string_view op_type, int since_min, int since_max, KernelFactory factory, NodeCheck check,
           std::vector<size_t> host_inputs = {});
  /// Support for node n with these input types: op, opset and dtype checks, with the reason.
  Support supports(const ir::Node& n, std::span<const ir::DType> input_dtypes) const;
  const KernelFactory* find(const ir::Node& n) const;
  /// The host inputs of the entry that runs n (empty when none).
  std::vector<size_t> host_inputs(const ir::Node& n) const;
  /// Registered op types, sorted (tests run one case per registered kernel).
  std::vector<std::string> ops() const;

 private:
  struct Entry {
    int since_min, since_max;
    KernelFactory factory;
    NodeCheck check;
    std::vector<size_t> host_inputs;
  };
  const Entry* entry(const ir::Node& n) const;
  std::map<std::string, std::vector<Entry>, std::less<>> entries_;
};

// Common dtype checks.
/// Inputs at `indices` (all present inputs when empty) are f32 or f16.
NodeCheck float_inputs(std::vector<int> indices = {});
/// Inputs at `indices` are f32, f16, i32 or i64 (arithmetic).
NodeCheck numeric_inputs(std::vector<int> indices = {});
/// Any fixed-width type of 1, 2, 4 or 8 bytes (data movement); strings and sub-byte types: no.
NodeCheck any_fixed_width(std::vector<int> indices = {});
/// All of several checks.
NodeCheck all_of(std::vector<NodeCheck> checks);

void register_all(OpTable& t);
// One per family (ops/<family>.cpp).
void register_elementwise(OpTable& t);   // unary, binary with broadcasting, activations, Where, Cast
void register_matmul(OpTable& t);        // Gemm, MatMul, Conv
void register_normalization(OpTable& t); // BatchNormalization, LayerNormalization, Softmax
void register_reduce_pool(OpTable& t);   // reductions, pooling
void register_data_movement(OpTable& t); // Concat/Split/Slice/Transpose/Reshape/Gather/Pad/Resize/...
void register_quantize(OpTable& t);      // QuantizeLinear, DequantizeLinear

/// Conv/Gemm + activation epilogue fusion (ops/fusion.cpp), the backend's Backend::fuse answer.
std::optional<FusedKernel> fuse(const ir::Node& n);

}  // namespace mcc::backends::cuda
