// Keys for plan-time common-subexpression detection (see duplicate_nodes.h).
#include "backends/duplicate_nodes.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ir/op_facts.h"

namespace mcc::backends {

namespace {

void put_int(std::string& k, int64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof(v)); }

void put_str(std::string& k, const std::string& s) {
  put_int(k, static_cast<int64_t>(s.size()));
  k += s;
}

void put_float(std::string& k, float f) {  // bit pattern: -0 and NaN payloads stay distinct
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  put_int(k, bits);
}

}  // namespace

std::string duplicate_key(const ir::Node& n) {
  if (n.inputs.empty() || n.outputs.empty() || ir::draws_random_values(n.op_type) || !n.subgraphs().empty()) return {};
  std::string k;
  put_str(k, n.op_type);
  put_str(k, n.domain);
  put_int(k, n.since_version);
  put_int(k, static_cast<int64_t>(n.inputs.size()));
  for (const ir::Value* v : n.inputs) put_int(k, static_cast<int64_t>(reinterpret_cast<uintptr_t>(v)));
  put_int(k, static_cast<int64_t>(n.outputs.size()));
  for (const ir::Value* o : n.outputs) put_int(k, o ? 1 : 0);
  std::vector<const ir::Attribute*> attrs;
  for (const ir::Attribute& a : n.attrs) attrs.push_back(&a);
  std::sort(attrs.begin(), attrs.end(), [](const ir::Attribute* a, const ir::Attribute* b) { return a->name < b->name; });
  for (const ir::Attribute* a : attrs) {
    if (!a->ref_attr_name.empty() || !a->proto_passthrough.empty()) return {};
    put_str(k, a->name);
    put_int(k, static_cast<int64_t>(a->kind));
    switch (a->kind) {
      case ir::AttrKind::Float: put_float(k, std::get<float>(a->value)); break;
      case ir::AttrKind::Int: put_int(k, std::get<int64_t>(a->value)); break;
      case ir::AttrKind::String: put_str(k, std::get<std::string>(a->value)); break;
      case ir::AttrKind::Floats: {
        const auto& v = std::get<std::vector<float>>(a->value);
        put_int(k, static_cast<int64_t>(v.size()));
        for (float f : v) put_float(k, f);
        break;
      }
      case ir::AttrKind::Ints: {
        const auto& v = std::get<std::vector<int64_t>>(a->value);
        put_int(k, static_cast<int64_t>(v.size()));
        for (int64_t i : v) put_int(k, i);
        break;
      }
      case ir::AttrKind::Strings: {
        const auto& v = std::get<std::vector<std::string>>(a->value);
        put_int(k, static_cast<int64_t>(v.size()));
        for (const std::string& s : v) put_str(k, s);
        break;
      }
      default: return {};  // tensors, graphs, opaque kinds: always run
    }
  }
  return k;
}

}  // namespace mcc::backends
