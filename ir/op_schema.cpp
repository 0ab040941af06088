// ONNX schema type facts (see op_schema.h). The only file besides import/export that reads
// libonnx, and it reads schemas only.
#include "ir/op_schema.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>

#include <onnx/defs/schema.h>

namespace mcc::ir {

bool SlotTypes::allows_float_and(DType low) const {
  if (!allows_f32) return false;
  if (low == DType::F16) return allows_f16;
  if (low == DType::BF16) return allows_bf16;
  return false;
}

const SlotTypes* OpTypeInfo::input(size_t i) const {
  if (i < inputs.size()) return &inputs[i];
  if (!inputs.empty() && inputs.back().variadic) return &inputs.back();
  return nullptr;
}

const SlotTypes* OpTypeInfo::output(size_t i) const {
  if (i < outputs.size()) return &outputs[i];
  if (!outputs.empty() && outputs.back().variadic) return &outputs.back();
  return nullptr;
}

namespace {

std::string onnx_domain(std::string_view d) { return d == "ai.onnx" ? std::string() : std::string(d); }

SlotTypes slot_of(const onnx::OpSchema::FormalParameter& p) {
  SlotTypes s;
  s.name = p.GetName();
  s.type_param = p.GetTypeStr();
  s.optional = p.GetOption() == onnx::OpSchema::Optional;
  s.variadic = p.GetOption() == onnx::OpSchema::Variadic;
  // GetTypes() is the resolved set (a parameter's allowed types, or the literal type).
  for (const std::string* t : p.GetTypes()) {
    if (!t) continue;
    if (*t == "tensor(float)") s.allows_f32 = true;
    else if (*t == "tensor(float16)") s.allows_f16 = true;
    else if (*t == "tensor(bfloat16)") s.allows_bf16 = true;
    if (t->rfind("tensor(", 0) != 0) s.tensor_only = false;
  }
  return s;
}

}  // namespace

int64_t max_known_opset(std::string_view domain) {
  const auto& m = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto it = m.find(onnx_domain(domain));
  return it == m.end() ? 0 : it->second.second;
}

const OpTypeInfo* op_type_info(std::string_view op, std::string_view domain, int64_t opset) {
  static std::mutex mu;
  static std::map<std::tuple<std::string, std::string, int64_t>, std::unique_ptr<OpTypeInfo>> cache;
  const std::string dom = onnx_domain(domain);
  auto key = std::make_tuple(std::string(op), dom, opset);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second.get();
  const int64_t known = max_known_opset(dom);
  const int version = static_cast<int>(std::min<int64_t>(opset > 0 ? opset : known, known > 0 ? known : opset));
  const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(std::string(op), version, dom);
  std::unique_ptr<OpTypeInfo> info;
  if (s) {
    info = std::make_unique<OpTypeInfo>();
    info->op = std::string(op);
    info->domain = dom;
    info->since_version = s->SinceVersion();
    info->newer_than_schemas = known > 0 && opset > known;
    for (const auto& p : s->inputs()) info->inputs.push_back(slot_of(p));
    for (const auto& p : s->outputs()) info->outputs.push_back(slot_of(p));
  }
  return cache.emplace(std::move(key), std::move(info)).first->second.get();
}

const std::vector<std::string>& known_onnx_op_names() {
  static const std::vector<std::string> names = [] {
    std::set<std::string> s;
    for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas())
      if (schema.domain().empty()) s.insert(schema.Name());
    return std::vector<std::string>(s.begin(), s.end());
  }();
  return names;
}

}  // namespace mcc::ir
