// ONNX Runtime from tests: whether python3 can import it, and its outputs of a model written into
// sample folders (tests/cli/ort_outputs.py) so that `mcc eval MODEL --golden DIR` compares mcc's
// cpu backend with ONNX Runtime on the same inputs.
#pragma once
#include <cstdlib>
#include <string>

#include "support/paths.h"

namespace mcc::test {

/// python3 with onnxruntime and numpy importable (scripts/setup.sh installs them).
inline bool have_onnxruntime() { return std::system("python3 -c 'import onnxruntime, numpy' > /dev/null 2>&1") == 0; }

inline constexpr const char* kOrtMissing = "python3 with onnxruntime and numpy is needed (scripts/setup.sh installs them)";

/// Writes DIR/<sample>/output_K.npy with ONNX Runtime's outputs of `model` for every sample of
/// `dir`; false when the script fails.
inline bool write_ort_outputs(const std::string& model, const std::string& dir) {
  const std::string script = (source_dir() / "tests" / "cli" / "ort_outputs.py").string();
  return std::system(("python3 '" + script + "' '" + model + "' '" + dir + "' > /dev/null").c_str()) == 0;
}

}  // namespace mcc::test
