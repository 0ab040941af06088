// Builds the `mcc inspect` summary (ordered JSON) and renders it as text. One pass over every
// graph (subgraphs included); every list is sorted or kept in file order, so output is stable.
#include "report/model_summary.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

#include "ir/weight_layout.h"
#include "transforms/prune/prune.h"

namespace mcc::report {
namespace {

using nlohmann::ordered_json;

ordered_json shape_json(const ir::Shape& s) {
  if (!s.dims) return nullptr;
  ordered_json a = ordered_json::array();
  for (const auto& d : *s.dims) {
    if (d.value) a.push_back(*d.value);
    else if (!d.param.empty()) a.push_back(d.param);
    else a.push_back(nullptr);
  }
  return a;
}

ordered_json value_json(const ir::Value& v) {
  ordered_json o;
  o["name"] = v.name;
  o["dtype"] = v.dtype == ir::DType::Undefined ? (v.type_passthrough.bytes.empty() ? "?" : "non-tensor")
                                               : ir::dtype_name(v.dtype);
  o["shape"] = shape_json(v.shape);
  return o;
}

/// Exact zeros among the elements of a float tensor (+0 and -0 both count).
int64_t count_zeros(const ir::Tensor& t) {
  const auto b = t.bytes();
  if (b.size() != t.nbytes()) return 0;
  int64_t z = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(b.data());
  const size_t n = static_cast<size_t>(t.numel());
  switch (t.dtype()) {
    case ir::DType::F32:
      for (size_t i = 0; i < n; ++i) { uint32_t u; std::memcpy(&u, p + 4 * i, 4); z += (u & 0x7fffffffu) == 0; }
      break;
    case ir::DType::F64:
      for (size_t i = 0; i < n; ++i) { uint64_t u; std::memcpy(&u, p + 8 * i, 8); z += (u << 1) == 0; }
      break;
    case ir::DType::F16:
    case ir::DType::BF16:
      for (size_t i = 0; i < n; ++i) { uint16_t u; std::memcpy(&u, p + 2 * i, 2); z += (u & 0x7fffu) == 0; }
      break;
    default: break;
  }
  return z;
}

bool is_quantized_op(const ir::Node& n) {
  const std::string& op = n.op_type;
  return op.rfind("QLinear", 0) == 0 || op == "ConvInteger" || op == "MatMulInteger" ||
         op == "DynamicQuantizeLinear" || op == "QGemm" || op == "DynamicQuantizeMatMul";
}

struct DTypeTotals { int64_t tensors = 0, elements = 0, bytes = 0; };

ordered_json totals_json(const DTypeTotals& t) {
  return ordered_json{{"tensors", t.tensors}, {"elements", t.elements}, {"bytes", t.bytes}};
}

}  // namespace

ordered_json summarize_model(const ir::Model& m, const std::string& path, uint64_t file_size) {
  ordered_json s;
  s["path"] = path;
  s["file_bytes"] = file_size;
  s["ir_version"] = m.ir_version;
  s["producer"] = {{"name", m.producer_name}, {"version", m.producer_version}};
  s["domain"] = m.domain;
  s["model_version"] = m.model_version;
  ordered_json opsets = ordered_json::array();
  for (const auto& o : m.opset_imports) opsets.push_back({{"domain", o.domain}, {"version", o.version}});
  s["opsets"] = opsets;

  const ir::Graph& g = *m.graph;
  ordered_json inputs = ordered_json::array(), outputs = ordered_json::array();
  int64_t init_inputs = 0;
  for (const ir::Value* v : g.inputs) {
    if (!v) continue;
    if (v->is_constant()) { ++init_inputs; continue; }  // IR < 4 lists initializers as inputs
    inputs.push_back(value_json(*v));
  }
  for (const ir::Value* v : g.outputs) if (v) outputs.push_back(value_json(*v));
  s["inputs"] = inputs;
  s["initializer_inputs"] = init_inputs;
  s["outputs"] = outputs;

  std::map<std::pair<std::string, std::string>, int64_t> hist;  // (domain, op) -> count
  std::map<int32_t, DTypeTotals> params;                         // keyed by ONNX dtype code
  DTypeTotals constants;
  int64_t float_elems = 0, zeros = 0, n_graphs = 0, sub_nodes = 0, q = 0, dq = 0, qops = 0;
  int64_t i8 = 0, u8 = 0;
  ordered_json qtensors = ordered_json::array();
  std::map<std::string, DTypeTotals> ext_files;  // location -> totals (sorted by name)
  DTypeTotals ext_total;

  auto visit_tensor = [&](const ir::Tensor& t) {
    if (t.external) {
      auto& f = ext_files[t.external->location];
      f.tensors += 1;
      f.bytes += static_cast<int64_t>(t.nbytes());
      ext_total.tensors += 1;
      ext_total.bytes += static_cast<int64_t>(t.nbytes());
    }
    if (ir::info(t.dtype()).is_float && ir::info(t.dtype()).computable) {
      float_elems += t.numel();
      zeros += count_zeros(t);
    }
  };

  ir::for_each_graph(*m.graph, [&](ir::Graph& sg) {
    ++n_graphs;
    if (&sg != m.graph.get()) sub_nodes += static_cast<int64_t>(sg.nodes().size());
    for (const ir::Value* v : sg.initializers) {
      if (!v || !v->initializer) continue;
      const ir::Tensor& t = *v->initializer;
      auto& p = params[static_cast<int32_t>(t.dtype())];
      p.tensors += 1;
      p.elements += t.numel();
      p.bytes += static_cast<int64_t>(t.nbytes());
      visit_tensor(t);
      if (t.dtype() == ir::DType::I8 || t.dtype() == ir::DType::U8) {
        (t.dtype() == ir::DType::I8 ? i8 : u8) += 1;
        qtensors.push_back({{"name", v->name}, {"dtype", ir::dtype_name(t.dtype())}, {"shape", t.dims()}});
      }
    }
    for (const ir::Node* n : sg.nodes()) {
      hist[{n->domain == "ai.onnx" ? "" : n->domain, n->op_type}] += 1;
      if (n->is("QuantizeLinear")) ++q;
      else if (n->is("DequantizeLinear")) ++dq;
      else if (is_quantized_op(*n)) ++qops;
      if (n->is("Constant"))
        if (const auto* a = n->attr("value"); a && std::holds_alternative<ir::Tensor>(a->value)) {
          const auto& t = std::get<ir::Tensor>(a->value);
          constants.tensors += 1;
          constants.elements += t.numel();
          constants.bytes += static_cast<int64_t>(t.nbytes());
          visit_tensor(t);
        }
    }
  });

  const int64_t main_nodes = static_cast<int64_t>(g.nodes().size());
  s["nodes"] = {{"total", main_nodes + sub_nodes}, {"main_graph", main_nodes}, {"in_subgraphs", sub_nodes}};
  std::vector<std::tuple<int64_t, std::string, std::string>> ops;
  for (const auto& [k, c] : hist) ops.emplace_back(-c, k.first, k.second);
  std::sort(ops.begin(), ops.end());  // most frequent first, then by domain and name
  ordered_json ops_json = ordered_json::array();
  for (const auto& [c, dom, op] : ops) ops_json.push_back({{"op", op}, {"domain", dom}, {"count", -c}});
  s["ops"] = ops_json;

  DTypeTotals all;
  ordered_json by_dtype = ordered_json::array();
  for (const auto& [code, t] : params) {
    all.tensors += t.tensors;
    all.elements += t.elements;
    all.bytes += t.bytes;
    ordered_json e{{"dtype", ir::dtype_name(static_cast<ir::DType>(code))}};
    e.update(totals_json(t));
    by_dtype.push_back(e);
  }
  ordered_json pj = totals_json(all);
  pj["by_dtype"] = by_dtype;
  s["parameters"] = pj;
  s["constants"] = totals_json(constants);
  s["sparsity"] = {{"float_elements", float_elems},
                   {"zeros", zeros},
                   {"fraction", float_elems ? static_cast<double>(zeros) / static_cast<double>(float_elems) : 0.0}};
  s["quantized"] = {{"int8_initializers", i8},     {"uint8_initializers", u8}, {"QuantizeLinear", q},
                    {"DequantizeLinear", dq},      {"other_quantized_ops", qops}, {"tensors", qtensors}};
  ordered_json files = ordered_json::array();
  for (const auto& [loc, t] : ext_files) files.push_back({{"location", loc}, {"tensors", t.tensors}, {"bytes", t.bytes}});
  s["external_data"] = {{"tensors", ext_total.tensors}, {"bytes", ext_total.bytes}, {"files", files}};
  s["subgraphs"] = {{"count", n_graphs - 1}, {"nodes", sub_nodes}};
  ordered_json meta = ordered_json::object();
  for (const auto& [k, v] : m.metadata_props) meta[k] = v;
  s["metadata"] = meta;
  // Prunable layers (what `prune` acts on): weight shape, output channels and sparsity.
  ordered_json layers = ordered_json::array();
  for (const ir::Node* n : g.nodes()) {
    const ir::Value* w = transforms::prune::prunable_weight(*n);
    if (!w) continue;
    const auto& d = w->initializer->dims();
    // Conv/ConvTranspose weights of rank 2 are described too; a weight without a layout
    // (MatMul's batched ones) reports its last dim.
    const auto l = ir::weight_layout(*n, d, ir::ConvWeightRank::ChannelAxes);
    const int64_t out_ch = l ? l->out_channels : d.empty() ? 0 : d.back();
    const int64_t z = count_zeros(*w->initializer), numel = w->initializer->numel();
    layers.push_back({{"name", transforms::prune::node_key(*n)}, {"op", n->op_type}, {"weight", w->name},
                      {"shape", d}, {"out_channels", out_ch}, {"zeros", z},
                      {"sparsity", numel ? static_cast<double>(z) / static_cast<double>(numel) : 0.0}});
  }
  s["layers"] = layers;
  return s;
}

namespace {

std::string shape_text(const ordered_json& shape) {
  if (shape.is_null()) return "[?*]";
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ",";
    const auto& d = shape[i];
    out += d.is_null() ? "?" : d.is_string() ? d.get<std::string>() : std::to_string(d.get<int64_t>());
  }
  return out + "]";
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string human_bytes(int64_t b) {
  if (b < 1024) return std::to_string(b) + " B";
  if (b < 1024 * 1024) return fmt("%.1f KiB", static_cast<double>(b) / 1024.0);
  if (b < 1024LL * 1024 * 1024) return fmt("%.1f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
  return fmt("%.2f GiB", static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0));
}

}  // namespace

std::string render_summary(const ordered_json& s) {
  std::string out;
  out += "model:       " + s["path"].get<std::string>() + " (" + human_bytes(s["file_bytes"].get<int64_t>()) + ")\n";
  std::string producer = s["producer"]["name"].get<std::string>();
  if (!s["producer"]["version"].get<std::string>().empty()) producer += " " + s["producer"]["version"].get<std::string>();
  out += "ir_version:  " + std::to_string(s["ir_version"].get<int64_t>()) +
         (producer.empty() ? "" : "   producer: " + producer) + "\n";
  out += "opsets:     ";
  for (const auto& o : s["opsets"]) {
    const std::string d = o["domain"].get<std::string>();
    out += " " + (d.empty() ? std::string("ai.onnx") : d) + "=" + std::to_string(o["version"].get<int64_t>());
  }
  out += "\n";
  for (const char* key : {"inputs", "outputs"}) {
    out += std::string(key) + ":\n";
    for (const auto& v : s[key])
      out += "  " + v["name"].get<std::string>() + ": " + v["dtype"].get<std::string>() + shape_text(v["shape"]) + "\n";
  }
  const auto& nodes = s["nodes"];
  out += fmt("nodes:       %" PRId64 " (%" PRId64 " in the main graph, %" PRId64 " in subgraphs)\n",
             nodes["total"].get<int64_t>(), nodes["main_graph"].get<int64_t>(), nodes["in_subgraphs"].get<int64_t>());
  for (const auto& o : s["ops"]) {
    const std::string dom = o["domain"].get<std::string>();
    const std::string name = (dom.empty() ? "" : dom + ".") + o["op"].get<std::string>();
    out += fmt("  %-28s %6" PRId64 "\n", name.c_str(), o["count"].get<int64_t>());
  }
  const auto& p = s["parameters"];
  out += fmt("parameters:  %" PRId64 " in %" PRId64 " initializers, ", p["elements"].get<int64_t>(),
             p["tensors"].get<int64_t>()) + human_bytes(p["bytes"].get<int64_t>()) + "\n";
  for (const auto& d : p["by_dtype"])
    out += fmt("  %-6s %12" PRId64 " values in %" PRId64 " tensors, ", d["dtype"].get<std::string>().c_str(),
               d["elements"].get<int64_t>(), d["tensors"].get<int64_t>()) + human_bytes(d["bytes"].get<int64_t>()) + "\n";
  if (s["constants"]["tensors"].get<int64_t>() > 0)
    out += fmt("constants:   %" PRId64 " values in %" PRId64 " Constant nodes, ", s["constants"]["elements"].get<int64_t>(),
               s["constants"]["tensors"].get<int64_t>()) + human_bytes(s["constants"]["bytes"].get<int64_t>()) + "\n";
  const auto& sp = s["sparsity"];
  out += fmt("sparsity:    %.2f%% exact zeros (%" PRId64 " of %" PRId64 " float values)\n",
             100.0 * sp["fraction"].get<double>(), sp["zeros"].get<int64_t>(), sp["float_elements"].get<int64_t>());
  if (s.contains("layers") && !s["layers"].empty()) {
    out += fmt("layers:      %zu prunable (name, op, weight shape, output channels, sparsity)\n", s["layers"].size());
    for (const auto& l : s["layers"]) {
      std::string shape;
      for (const auto& x : l["shape"]) shape += (shape.empty() ? "" : "x") + std::to_string(x.get<int64_t>());
      out += fmt("  %-48s %-13s %-14s %6" PRId64 "  %6.2f%%\n", l["name"].get<std::string>().c_str(),
                 l["op"].get<std::string>().c_str(), shape.c_str(), l["out_channels"].get<int64_t>(),
                 100.0 * l["sparsity"].get<double>());
    }
  }
  const auto& q = s["quantized"];
  out += fmt("quantized:   %" PRId64 " int8 + %" PRId64 " uint8 initializers, %" PRId64 " QuantizeLinear, %" PRId64
             " DequantizeLinear, %" PRId64 " other quantized ops\n",
             q["int8_initializers"].get<int64_t>(), q["uint8_initializers"].get<int64_t>(),
             q["QuantizeLinear"].get<int64_t>(), q["DequantizeLinear"].get<int64_t>(),
             q["other_quantized_ops"].get<int64_t>());
  const auto& e = s["external_data"];
  if (e["tensors"].get<int64_t>() == 0) {
    out += "external:    none\n";
  } else {
    out += fmt("external:    %" PRId64 " tensors, ", e["tensors"].get<int64_t>()) + human_bytes(e["bytes"].get<int64_t>()) + "\n";
    for (const auto& f : e["files"])
      out += fmt("  %s: %" PRId64 " tensors, ", f["location"].get<std::string>().c_str(), f["tensors"].get<int64_t>()) +
             human_bytes(f["bytes"].get<int64_t>()) + "\n";
  }
  out += fmt("subgraphs:   %" PRId64 " (%" PRId64 " nodes)\n", s["subgraphs"]["count"].get<int64_t>(),
             s["subgraphs"]["nodes"].get<int64_t>());
  if (s["metadata"].empty()) {
    out += "metadata:    none\n";
  } else {
    out += "metadata:\n";
    for (const auto& [k, v] : s["metadata"].items()) out += "  " + k + " = " + v.get<std::string>() + "\n";
  }
  return out;
}

}  // namespace mcc::report
