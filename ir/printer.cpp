// Deterministic text dump of the IR. The format is exact-diffed by golden tests, so every choice
// here is stable: attributes in stored order, floats with %.9g, initializers as dtype, shape and a
// 32-bit FNV-1a checksum of their bytes, subgraphs nested under the node that owns them.
//
//   model ir_version=8 opsets=["":17] producer="pytorch 2.3"
//   graph main (X: f32[N,3,224,224]) -> (logits: f32[N,1000]) {
//     init conv1.W: f32[64,3,7,7] fnv1a=9c41e0d2
//     conv1_out = Conv@11(X, conv1.W) {kernel_shape=[7,7], strides=[2,2]} : f32[N,64,112,112]  # "conv1"
//   }
#include "ir/printer.h"
#include "ir/dims_text.h"

#include <cinttypes>
#include <cstdio>
#include <string_view>

namespace mcc::ir {
namespace {

uint32_t fnv1a(uint32_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 16777619u;
  }
  return h;
}
constexpr uint32_t kFnvBasis = 2166136261u;

std::string hex32(uint32_t h) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08" PRIx32, h);
  return buf;
}

std::string fmt_float(double f) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", f);
  return buf;
}

/// JSON-style quoted string (control and non-ASCII bytes escaped as \xNN, so output stays ASCII).
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out + "\"";
}

/// Value names print bare when they are plain identifiers (letters, digits, _ . : / -), else quoted.
std::string name_of(std::string_view s) {
  if (s.empty()) return "\"\"";
  for (unsigned char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
    if (!ok) return quoted(s);
  }
  return std::string(s);
}

std::string shape_str(const Shape& s) {
  if (!s.dims) return "";  // rank unknown: dtype alone
  std::string out = "[";
  for (size_t i = 0; i < s.dims->size(); ++i) {
    const Dim& d = (*s.dims)[i];
    if (i) out += ",";
    if (d.value) out += std::to_string(*d.value);
    else if (!d.param.empty()) out += d.param;
    else out += "?";
  }
  return out + "]";
}

std::string type_str(const Value* v) {
  if (!v) return "_";
  if (v->dtype == DType::Undefined) {
    if (!v->type_passthrough.bytes.empty()) return "opaque_type";
    return v->shape.dims ? "?" + shape_str(v->shape) : "?";
  }
  return dtype_name(v->dtype) + shape_str(v->shape);
}

uint32_t tensor_hash(const Tensor& t) {
  if (t.dtype() == DType::String) {
    uint32_t h = kFnvBasis;
    for (const auto& s : t.strings()) {
      const uint64_t n = s.size();
      h = fnv1a(h, &n, sizeof n);
      h = fnv1a(h, s.data(), s.size());
    }
    return h;
  }
  const auto b = t.bytes();
  return fnv1a(kFnvBasis, b.data(), b.size());
}


std::string tensor_summary(const Tensor& t) {
  std::string s = dtype_name(t.dtype()) + dims_text(t.dims()) + " fnv1a=" + hex32(tensor_hash(t));
  if (t.external) s += " external=" + quoted(t.external->location);
  return s;
}

std::string opaque_summary(std::string_view kind, const OpaqueProto& p) {
  return "<" + std::string(kind) + " " + std::to_string(p.bytes.size()) + "B fnv1a=" +
         hex32(fnv1a(kFnvBasis, p.bytes.data(), p.bytes.size())) + ">";
}

template <class T, class F>
std::string list_str(const std::vector<T>& v, F&& f) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) { if (i) out += ","; out += f(v[i]); }
  return out + "]";
}

std::string graph_ref(const std::shared_ptr<Graph>& g) {
  return g ? "<graph " + name_of(g->name) + ">" : "<null graph>";
}

std::string attr_value_str(const Attribute& a) {
  if (!a.ref_attr_name.empty()) return "@" + name_of(a.ref_attr_name);
  struct Visitor {
    std::string operator()(std::monostate) const { return "[]"; }
    std::string operator()(float f) const { return fmt_float(f); }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(const std::string& s) const { return quoted(s); }
    std::string operator()(const Tensor& t) const { return "<tensor " + tensor_summary(t) + ">"; }
    std::string operator()(const std::shared_ptr<Graph>& g) const { return graph_ref(g); }
    std::string operator()(const std::vector<float>& v) const {
      return list_str(v, [](float f) { return fmt_float(f); });
    }
    std::string operator()(const std::vector<int64_t>& v) const {
      return list_str(v, [](int64_t i) { return std::to_string(i); });
    }
    std::string operator()(const std::vector<std::string>& v) const {
      return list_str(v, [](const std::string& s) { return quoted(s); });
    }
    std::string operator()(const std::vector<Tensor>& v) const {
      return list_str(v, [](const Tensor& t) { return "<tensor " + tensor_summary(t) + ">"; });
    }
    std::string operator()(const std::vector<std::shared_ptr<Graph>>& v) const {
      return list_str(v, graph_ref);
    }
    std::string operator()(const OpaqueProto& p) const { return opaque_summary(kind_name, p); }
    std::string operator()(const std::vector<OpaqueProto>& v) const {
      return list_str(v, [this](const OpaqueProto& p) { return opaque_summary(kind_name, p); });
    }
    std::string_view kind_name;
  };
  const bool sparse = a.kind == AttrKind::SparseTensor || a.kind == AttrKind::SparseTensors;
  return std::visit(Visitor{sparse ? "sparse_tensor" : "type_proto"}, a.value);
}

std::string value_list(const std::vector<Value*>& vs, bool with_types) {
  std::string out;
  for (size_t i = 0; i < vs.size(); ++i) {
    if (i) out += ", ";
    if (!vs[i]) { out += "_"; continue; }
    out += name_of(vs[i]->name);
    if (with_types) out += ": " + type_str(vs[i]);
  }
  return out;
}

void print_graph_into(const Graph& g, int indent, std::string& out);

void print_node(const Node& n, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  std::string line = pad;
  if (!n.outputs.empty()) line += value_list(n.outputs, false) + " = ";
  if (!n.domain.empty() && n.domain != "ai.onnx") line += n.domain + ".";
  line += n.op_type;
  if (n.since_version > 0) line += "@" + std::to_string(n.since_version);
  line += "(" + value_list(n.inputs, false) + ")";
  if (!n.attrs.empty()) {
    line += " {";
    for (size_t i = 0; i < n.attrs.size(); ++i)
      {
      if (i) line += ", ";
      line += name_of(n.attrs[i].name) + "=" + attr_value_str(n.attrs[i]);
    }
    line += "}";
  }
  if (!n.outputs.empty()) {
    line += " : ";
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (i) line += ", ";
      line += type_str(n.outputs[i]);
    }
  }
  if (!n.name.empty()) line += "  # " + quoted(n.name);
  out += line + "\n";
  // Subgraphs follow their node, indented one more level and labelled by attribute name.
  for (const auto& s : n.subgraph_slots()) {
    out += pad + "  " + name_of(s.attr->name) + (s.index < 0 ? "" : "[" + std::to_string(s.index) + "]") + ": ";
    print_graph_into(*s.graph, indent + 2, out);
  }
}

// Writes "graph NAME (ins) -> (outs) {" (no leading indent: the caller placed it) then the body.
void print_graph_into(const Graph& g, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  out += "graph " + name_of(g.name) + " (" + value_list(g.inputs, true) + ") -> (" +
         value_list(g.outputs, true) + ") {\n";
  for (const Value* v : g.initializers) {
    if (!v) continue;
    out += pad + "  init " + name_of(v->name) + ": ";
    out += v->initializer ? tensor_summary(*v->initializer) : std::string("<missing tensor>");
    out += "\n";
  }
  for (const auto& p : g.sparse_initializers) out += pad + "  sparse_init " + opaque_summary("sparse_tensor", p) + "\n";
  for (const Node* n : g.nodes()) print_node(*n, indent + 2, out);
  out += pad + "}\n";
}

}  // namespace

std::string print_graph(const Graph& g, int indent) {
  std::string out(static_cast<size_t>(indent), ' ');
  print_graph_into(g, indent, out);
  return out;
}

std::string print_model(const Model& m) {
  std::string out = "model ir_version=" + std::to_string(m.ir_version) + " opsets=[";
  for (size_t i = 0; i < m.opset_imports.size(); ++i)
    {
    if (i) out += ", ";
    out += quoted(m.opset_imports[i].domain) + ":" + std::to_string(m.opset_imports[i].version);
  }
  out += "]";
  if (!m.producer_name.empty() || !m.producer_version.empty()) {
    std::string producer = m.producer_name;
    if (!m.producer_version.empty()) {
      if (!producer.empty()) producer += " ";
      producer += m.producer_version;
    }
    out += " producer=" + quoted(producer);
  }
  if (!m.domain.empty()) out += " domain=" + quoted(m.domain);
  if (m.model_version != 0) out += " model_version=" + std::to_string(m.model_version);
  if (!m.functions.empty()) out += " functions=" + std::to_string(m.functions.size());
  out += "\n";
  for (const auto& [k, v] : m.metadata_props) out += "meta " + quoted(k) + " = " + quoted(v) + "\n";
  if (m.graph) out += print_graph(*m.graph, 0);
  return out;
}

}  // namespace mcc::ir
