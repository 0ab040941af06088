// The backends this build has, found by name. `--backend NAME` resolves here for every command,
// so no command treats a backend specially. cpu is always present; cuda when the CUDA toolkit was
// found at build time (it may still be unavailable at run time: no driver, no device).
#pragma once
#include <string_view>
#include <vector>

#include "backends/backend.h"

namespace mcc::backends {

/// Every backend of this build, cpu first, in a fixed order.
std::vector<const Backend*> all_backends();
/// Those of all_backends() that can run in this process.
std::vector<const Backend*> available_backends();
/// The backend called `name`. Throws UsageError (exit 2) for a name this build does not have,
/// listing the names it has, and, unless `allow_unavailable` (placement planning), BackendError
/// (exit 5) with the backend's one-line reason when it cannot run here.
const Backend& find_backend(std::string_view name, bool allow_unavailable = false);

}  // namespace mcc::backends
