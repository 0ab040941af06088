// --backend / --threads handling shared by eval, bench and calibration.
#pragma once
#include <string>

#include "backends/executor.h"

namespace mcc::cli {
/// Resolves --backend through the backend registry: UsageError (exit 2) for an unknown name,
/// BackendError (exit 5) for a backend that cannot run here (no cuda in this build, no GPU).
backends::ExecOptions exec_options(const std::string& backend, int threads);
}  // namespace mcc::cli
