// Where the tests find their data: the source tree, Debian's ONNX test data, ../shared.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace mcc::test {
/// The source tree (MCC_SOURCE_DIR overrides: a test binary built on one machine and run on another).
inline std::filesystem::path source_dir() {
  if (const char* e = std::getenv("MCC_SOURCE_DIR")) return e;
  return MCC_SOURCE_DIR;
}
/// Debian's libonnx-testdata (node, simple, pytorch-converted, pytorch-operator).
inline std::filesystem::path onnx_testdata_dir() {
  if (const char* e = std::getenv("MCC_ONNX_BACKEND_TEST_DIR")) return e;
  return MCC_ONNX_BACKEND_TEST_DIR;
}
/// ../shared beside the project (models, data, the newer node tests); may be absent.
inline std::filesystem::path shared_dir() {
  if (const char* e = std::getenv("MCC_SHARED_DIR")) return e;
  return MCC_SHARED_DIR;
}
inline std::filesystem::path mcc_binary() { return MCC_BINARY; }
/// A fresh, empty temporary folder removed when the object goes away.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag = "mcc-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (tag + "-XXXXXX")).string();
    char* p = ::mkdtemp(tmpl.data());
    path = p ? std::filesystem::path(p) : std::filesystem::path();
  }
  ~TempDir() { std::error_code ec; std::filesystem::remove_all(path, ec); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};
}  // namespace mcc::test
