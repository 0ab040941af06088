// OpTable lookups by (op type, opset range), the common element-type checks, and register_all,
// the list of kernel families the cuda backend has. Only ai.onnx ops are registered: a node of
// another domain is declined here and runs on the cpu.
#include "backends/cuda/op_table.h"

#include <algorithm>
#include <utility>

namespace mcc::backends::cuda {
namespace {

bool is_default_domain(const ir::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

std::string opset_text(const ir::Node& n) { return std::to_string(n.since_version); }

/// The indices a check applies to: `indices`, or every present input when empty.
std::vector<int> checked_inputs(const std::vector<int>& indices, const ir::Node& n) {
  if (!indices.empty()) return indices;
  std::vector<int> all;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i]) all.push_back(static_cast<int>(i));
  return all;
}

/// A check that every selected, present input has a type `accept` takes; `what` names the
/// accepted set in the reason.
NodeCheck dtype_check(std::vector<int> indices, bool (*accept)(ir::DType)) {
  return [indices = std::move(indices), accept](const ir::Node& n, std::span<const ir::DType> dts) -> std::string {
    for (int i : checked_inputs(indices, n)) {
      if (i < 0 || static_cast<size_t>(i) >= n.inputs.size() || !n.inputs[i]) continue;  // omitted optional
      const ir::DType dt = static_cast<size_t>(i) < dts.size() ? dts[i] : ir::DType::Undefined;
      if (dt == ir::DType::Undefined) return "input " + std::to_string(i) + " type unknown at plan time";
      if (!accept(dt)) return "input " + std::to_string(i) + " is " + ir::dtype_name(dt);
    }
    return {};
  };
}

bool is_float(ir::DType d) { return d == ir::DType::F32 || d == ir::DType::F16; }
bool is_numeric(ir::DType d) { return is_float(d) || d == ir::DType::I32 || d == ir::DType::I64; }
bool is_fixed_width(ir::DType d) {
  if (d == ir::DType::String || d == ir::DType::Undefined) return false;
  const ir::DTypeInfo& inf = ir::info(d);
  return inf.bits == 8 || inf.bits == 16 || inf.bits == 32 || inf.bits == 64;
}

}  // namespace

void OpTable::add(std::string_view op_type, int since_min, int since_max, KernelFactory factory, NodeCheck check,
                  std::vector<size_t> host_inputs) {
  entries_[std::string(op_type)].push_back(
      Entry{since_min, since_max, std::move(factory), std::move(check), std::move(host_inputs)});
}

const OpTable::Entry* OpTable::entry(const ir::Node& n) const {
  if (!is_default_domain(n)) return nullptr;
  auto it = entries_.find(n.op_type);
  if (it == entries_.end()) return nullptr;
  for (const Entry& e : it->second)
    if (n.since_version >= e.since_min && (e.since_max == 0 || n.since_version <= e.since_max)) return &e;
  return nullptr;
}

Support OpTable::supports(const ir::Node& n, std::span<const ir::DType> input_dtypes) const {
  if (!is_default_domain(n)) return Support::no("domain " + n.domain);
  const Entry* e = entry(n);
  if (!e) {
    if (entries_.count(n.op_type))
      return Support::no("the cuda backend has no kernel for " + n.op_type + " at opset " + opset_text(n));
    return Support::no("op " + n.op_type + " has no cuda kernel");
  }
  if (e->check) {
    std::string why = e->check(n, input_dtypes);
    if (!why.empty()) return Support::no(std::move(why));
  }
  return Support::yes();
}

const KernelFactory* OpTable::find(const ir::Node& n) const {
  const Entry* e = entry(n);
  return e ? &e->factory : nullptr;
}

std::vector<size_t> OpTable::host_inputs(const ir::Node& n) const {
  const Entry* e = entry(n);
  return e ? e->host_inputs : std::vector<size_t>{};
}

std::vector<std::string> OpTable::ops() const {
  std::vector<std::string> out;
  for (const auto& [op, list] : entries_) out.push_back(op);
  return out;  // std::map keeps them sorted
}

NodeCheck float_inputs(std::vector<int> indices) { return dtype_check(std::move(indices), is_float); }

NodeCheck numeric_inputs(std::vector<int> indices) { return dtype_check(std::move(indices), is_numeric); }

NodeCheck any_fixed_width(std::vector<int> indices) { return dtype_check(std::move(indices), is_fixed_width); }

NodeCheck all_of(std::vector<NodeCheck> checks) {
  return [checks = std::move(checks)](const ir::Node& n, std::span<const ir::DType> dts) -> std::string {
    for (const NodeCheck& c : checks) {
      if (!c) continue;
      std::string why = c(n, dts);
      if (!why.empty()) return why;
    }
    return {};
  };
}

void register_all(OpTable& t) {
  // One line per kernel family (ops/<family>.cpp).
  register_elementwise(t);
  register_normalization(t);
  register_reduce_pool(t);
  register_matmul(t);
  register_data_movement(t);
  register_quantize(t);
}

}  // namespace mcc::backends::cuda
