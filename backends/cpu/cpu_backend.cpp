// The cpu backend: Eigen kernels looked up in one registry filled by the family registrations.
#include "backends/cpu/kernels/concat_quantize_fusion.h"
#include "backends/cpu/kernels/conv_fusion.h"
#include "backends/cpu/kernels/ew_chain_fusion.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layer_norm_fusion.h"
#include "backends/cpu/kernels/matmul_dequant.h"
#include "backends/cpu/kernels/matmul_fusion.h"
#include "backends/cpu/kernels/qdq_conv_fusion.h"
#include "backends/executor.h"

namespace mcc::backends {
namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend() { cpu::register_all(registry_); }
  std::string_view name() const override { return "cpu"; }
  Support supports(const ir::Node& n, std::span<const ir::DType>) const override {
    if (registry_.find(n)) return Support::yes();
    return Support::no("the cpu backend has no kernel for " + n.op_type + " at opset " + std::to_string(n.since_version));
  }
  std::optional<FusedKernel> fuse(const ir::Node& n) const override {
    if (auto f = cpu::fuse_qdq_conv(n)) return f;
    if (auto f = cpu::fuse_conv(n)) return f;
    if (auto f = cpu::fuse_concat_quantize(n)) return f;
    if (auto f = cpu::fuse_elementwise_chain(n)) return f;
    if (auto f = cpu::fuse_layer_norm(n)) return f;
    if (auto f = cpu::fuse_dequantized_matmul(n)) return f;
    return cpu::fuse_matmul(n);
  }
  std::vector<size_t> shape_only_inputs(const ir::Node& n) const override {
    if (n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size")) return {0};
    return {};
  }
  Kernel create_kernel(const ir::Node& n) const override {
    const KernelFactory* f = registry_.find(n);
    if (!f) {
      const std::string dom = n.domain.empty() ? "ai.onnx" : n.domain;
      if (registry_.has_op(n.op_type, n.domain))
        throw UnsupportedError(n.describe() + ": the cpu backend has no kernel for " + n.op_type +
                               " at opset " + std::to_string(n.since_version) + " (domain " + dom + ")");
      throw UnsupportedError(n.describe() + ": op " + n.op_type + " (domain " + dom + ", opset " +
                             std::to_string(n.since_version) + ") is not supported by the cpu backend");
    }
    return (*f)(n);
  }
  const KernelRegistry& registry() const { return registry_; }

 private:
  KernelRegistry registry_;
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend kBackend;
  return kBackend;
}

}  // namespace mcc::backends
