// Backend selection for commands that execute models.
#include "cli/backend_select.h"

#include "backends/backend_registry.h"

namespace mcc::cli {

backends::ExecOptions exec_options(const std::string& backend, int threads) {
  if (threads < 0) throw UsageError("--threads " + std::to_string(threads) + ": must be 0 (all cores) or more");
  backends::ExecOptions o;
  o.threads = threads;
  o.backend = &backends::find_backend(backend);
  return o;
}

}  // namespace mcc::cli
