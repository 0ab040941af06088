// Whole-file reads and writes for tests, in binary mode.
#pragma once
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace mcc::test {

/// The bytes of `p`; empty when it cannot be read.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Replaces the contents of `p` with `bytes`.
inline void spit(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace mcc::test
