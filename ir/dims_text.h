// Shapes in messages and reports: "[1,3,224,224]" ("[]" for a scalar).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mcc::ir {

inline std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace mcc::ir
