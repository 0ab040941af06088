// Kernel registry: (domain, op type, opset range) -> factory. Each op family registers itself
// from its own file through a register_<family>() function (explicit calls, no static registrars).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "backends/backend.h"

namespace mcc::backends {

class KernelRegistry {
 public:
  /// Registers a kernel for op versions [since_min, since_max] (since_max = 0: no upper bound).
  void add(std::string_view op_type, int since_min, int since_max, KernelFactory f,
           std::string_view domain = "");
  /// The factory for a node (by domain, op type and the node's since_version); nullptr if none.
  const KernelFactory* find(const ir::Node& n) const;
  bool has_op(std::string_view op_type, std::string_view domain = "") const;
  /// All registered (domain, op, min, max), sorted; for `mcc passes`-style listings and tests.
  std::vector<std::tuple<std::string, std::string, int, int>> list() const;

 private:
  struct Entry { int since_min, since_max; KernelFactory factory; };
  std::map<std::pair<std::string, std::string>, std::vector<Entry>, std::less<>> entries_;
};

}  // namespace mcc::backends
