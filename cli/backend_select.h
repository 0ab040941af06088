// --backend / --threads handling shared by eval, bench and calibration.
#pragma once
#include <string>

#include "backends/executor.h"

namespace mcc::cli {
/// Resolves --backend: "cpu" always; "cuda" throws BackendError (exit 5) when this build has no
/// cuda backend or the machine has no GPU; anything else throws UsageError.
backends::ExecOptions exec_options(const std::string& backend, int threads);
}  // namespace mcc::cli
