// The cuda backend: placement answers and kernels from the OpTable, memory from the caching
// device allocator, transfers through the device runtime (real or emulated: the same code serves
// both builds). Ops holding subgraphs (If, Loop, Scan) are never registered, so they stay on the
// cpu.
#include "backends/cuda/cuda_backend.h"

#include "backends/cuda/op_table.h"
#include "backends/cuda/runtime/device_allocator.h"
#include "backends/cuda/runtime/device_api.h"
#include "backends/cuda/runtime/device_errors.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

namespace rt = mcc::cuda;

class CudaBackend final : public Backend {
 public:
  CudaBackend() : unavailable_(rt::unavailable_reason()) { register_all(table_); }

  std::string_view name() const override { return "cuda"; }
  ir::Device device() const override { return {ir::DeviceType::Cuda, 0}; }
  std::string unavailable_reason() const override { return unavailable_; }

  Support supports(const ir::Node& n, std::span<const ir::DType> input_dtypes) const override {
    return table_.supports(n, input_dtypes);
  }

  Kernel create_kernel(const ir::Node& n) const override {
    const KernelFactory* f = table_.find(n);
    if (!f) {
      const std::string dom = n.domain.empty() ? "ai.onnx" : n.domain;
      throw UnsupportedError(n.describe() + ": op " + n.op_type + " (domain " + dom + ", opset " +
                             std::to_string(n.since_version) + ") is not supported by the cuda backend");
    }
    return (*f)(n);
  }

  std::optional<FusedKernel> fuse(const ir::Node& n) const override { return cuda::fuse(n); }

  std::vector<size_t> host_inputs(const ir::Node& n) const override { return table_.host_inputs(n); }

  std::shared_ptr<ir::Buffer> allocate(size_t bytes) const override { return rt::allocate_device_buffer(bytes); }

  ir::Tensor upload(const ir::Tensor& host) const override {
    MCC_CHECK(host.device().is_host(), "upload of a tensor that is not on the host");
    if (host.dtype() == ir::DType::String)
      throw UnsupportedError("the cuda backend cannot hold string tensors");
    const size_t bytes = host.nbytes();
    auto buf = rt::allocate_device_buffer(bytes);
    rt::copy_to_device(buf->mutable_data(), host.raw(), bytes);
    return ir::Tensor::from_buffer(host.dtype(), host.dims(), std::move(buf));
  }

  ir::Tensor download(const ir::Tensor& dev) const override {
    if (dev.device().is_host()) return dev;
    ir::Tensor out = ir::Tensor::from_buffer(dev.dtype(), dev.dims(), rt::allocate_download_buffer(dev.nbytes()));
    rt::copy_to_host(out.mutable_raw(), dev.device_data(), dev.nbytes());
    rt::check_device_errors();
    return out;
  }

  void synchronize() const override {
    rt::synchronize();
    rt::check_device_errors();
  }

 private:
  std::string unavailable_;
  OpTable table_;
};

}  // namespace

const Backend& cuda_backend() {
  static const CudaBackend kBackend;
  return kBackend;
}

}  // namespace mcc::backends::cuda
