// Backend selection for commands that execute models.
#include "cli/backend_select.h"

namespace mcc::cli {

backends::ExecOptions exec_options(const std::string& backend, int threads) {
  if (threads < 0) throw UsageError("--threads " + std::to_string(threads) + ": must be 0 (all cores) or more");
  backends::ExecOptions o;
  o.threads = threads;
  if (backend == "cpu") return o;
  if (backend == "cuda")
    throw BackendError("--backend cuda: this mcc build has no cuda backend; use --backend cpu");
  throw UsageError("--backend '" + backend + "': unknown backend (use cpu or cuda)");
}

}  // namespace mcc::cli
