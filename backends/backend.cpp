// Host defaults of the Backend interface: memory is host memory, transfers are no-ops.
#include "backends/backend.h"

namespace mcc::backends {

std::shared_ptr<ir::Buffer> Backend::allocate(size_t bytes) const { return ir::make_owned_buffer(bytes); }

ir::Tensor Backend::upload(const ir::Tensor& host) const { return host; }

ir::Tensor Backend::download(const ir::Tensor& dev) const { return dev; }

}  // namespace mcc::backends
