// Backend lookup by name with an availability check.
#include "backends/backend_registry.h"

#include "backends/executor.h"
#if defined(MCC_HAVE_CUDA)
#include "backends/cuda/cuda_backend.h"
#endif

namespace mcc::backends {

std::vector<const Backend*> all_backends() {
  std::vector<const Backend*> out{&cpu_backend()};
#if defined(MCC_HAVE_CUDA)
  out.push_back(&cuda::cuda_backend());
#endif
  return out;
}

std::vector<const Backend*> available_backends() {
  std::vector<const Backend*> out;
  for (const Backend* b : all_backends())
    if (b->unavailable_reason().empty()) out.push_back(b);
  return out;
}

const Backend& find_backend(std::string_view name, bool allow_unavailable) {
  std::string names;
  for (const Backend* b : all_backends()) {
    if (b->name() == name) {
      const std::string why = b->unavailable_reason();
      if (!why.empty() && !allow_unavailable)
        throw BackendError("--backend " + std::string(name) + ": " + why);
      return *b;
    }
    names += (names.empty() ? "" : ", ") + std::string(b->name());
  }
  if (name == "cuda")
    throw BackendError("--backend cuda: this mcc build has no cuda backend (the CUDA toolkit was not found "
                       "when it was built); use --backend cpu");
  throw UsageError("--backend '" + std::string(name) + "': unknown backend (this build has " + names + ")");
}

}  // namespace mcc::backends
