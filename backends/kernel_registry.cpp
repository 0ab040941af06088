// Kernel registry lookup by domain, op type and opset version.
#include "backends/kernel_registry.h"

namespace mcc::backends {
namespace {
std::string norm_domain(std::string_view d) { return d == "ai.onnx" ? std::string() : std::string(d); }
}  // namespace

void KernelRegistry::add(std::string_view op_type, int since_min, int since_max, KernelFactory f,
                         std::string_view domain) {
  entries_[{norm_domain(domain), std::string(op_type)}].push_back(Entry{since_min, since_max, std::move(f)});
}

const KernelFactory* KernelRegistry::find(const ir::Node& n) const {
  auto it = entries_.find(std::make_pair(norm_domain(n.domain), n.op_type));
  if (it == entries_.end()) return nullptr;
  const int v = n.since_version;
  for (const auto& e : it->second)
    if ((v == 0 || v >= e.since_min) && (e.since_max == 0 || v == 0 || v <= e.since_max)) return &e.factory;
  return nullptr;
}

bool KernelRegistry::has_op(std::string_view op_type, std::string_view domain) const {
  return entries_.count(std::make_pair(norm_domain(domain), std::string(op_type))) != 0;
}

std::vector<std::tuple<std::string, std::string, int, int>> KernelRegistry::list() const {
  std::vector<std::tuple<std::string, std::string, int, int>> out;
  for (const auto& [k, es] : entries_)
    for (const auto& e : es) out.emplace_back(k.first, k.second, e.since_min, e.since_max);
  return out;
}

}  // namespace mcc::backends
